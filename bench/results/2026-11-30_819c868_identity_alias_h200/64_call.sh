#!/bin/bash
# Call 64: runtime_bench of 819c868 (Identity is its input, no folded copy):
# TorchScript's ALBERT (transformers' default config, xxlarge: 0.8 GB of
# weights shared by 12 layers), which call 63 refused at binding's folding
# bound, float32, batch 1 and 3, against PyTorch in float64.
B=scratch/slim64.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 230 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models albert --exporters ts --batch-sizes 1,3 --precision fp32 > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^|' $O/zoo/model_zoo.md | cut -c1-700 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
