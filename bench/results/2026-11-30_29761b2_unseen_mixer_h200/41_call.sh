#!/bin/bash
# Call 41: timm's mixer_b16_224 again with its zero-initialised head drawn at
# random (the zoo's outputs were all 0 in call 40), runtime_bench of 29761b2
# (the GEMM fix), float32 and fp16-config, batch 1 and 8.
B=scratch/slim41.tar.xz  # bin/runtime_bench, lib (29761b2)
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for precision in fp32 fp16-config; do
  timeout 120 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$precision \
    --models timm:mixer_b16_224 --exporters dynamo --batch-sizes 1,8 --precision $precision > /tmp/zoo_$precision.txt 2>&1
  echo "zoo mixer $precision rc=$? $(el)" >> $O/summary.txt
  tail -3 /tmp/zoo_$precision.txt | cut -c1-1200 >> $O/summary.txt
done
