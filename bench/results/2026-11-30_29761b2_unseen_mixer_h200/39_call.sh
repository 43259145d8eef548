#!/bin/bash
# Call 39: why timm:mixer_b16_224 fails the padding check at batch 8 (call 38).
B=scratch/slim38.tar.xz  # bin/runtime_bench, lib (6c1c722)
O=$OUT
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 400 python3 scratch/mixer_bisect.py /tmp/mixer $O $bin > $O/bisect.txt 2>&1
echo "rc=$?" >> $O/bisect.txt
