#!/bin/bash
# Call 27: which CUDA object, made and destroyed, leaves host memory behind
# (scratch/leakprobe/leakprobe.cu; malloc's bytes in use per round).
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$cudnn_lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > $OUT/leak.txt
timeout 200 scratch/leakprobe/leakprobe >> $OUT/leak.txt 2>&1; echo "rc=$?" >> $OUT/leak.txt
