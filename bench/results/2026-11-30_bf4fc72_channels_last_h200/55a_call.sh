#!/bin/bash
# Call 55: channels-last convolutions on more of what users bring: ResNet-50
# and ResNeXt-50 as float32 exports converted by our pass (run first with
# bf16, a name the zoo does not take, then fp16-config, auto-config), TorchScript and dynamo
# exporters, batch 1 and 8; errors against PyTorch in float64.
B=scratch/slim55.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for precision in bf16 fp16-config auto-config; do
  left=$(( 420 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$precision \
    --models resnet50,tv:resnext50_32x4d --exporters ts,dynamo --batch-sizes 1,8 --precision $precision > /tmp/zoo.txt 2>&1
  echo "zoo $precision rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo.txt | cut -c1-800 >> $O/summary.txt
done
