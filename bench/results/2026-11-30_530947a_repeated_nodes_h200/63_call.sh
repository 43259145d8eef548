#!/bin/bash
# Call 63: the bundle of 530947a (bundle62; 68b5a92 changed comments only).
# Binding now emits repeated nodes once and makes one-input Concats and
# Casts to a value's own type aliases, for every model: a regression sweep
# over other families, TorchScript exporter (the one that repeats work),
# float32, batch 1 and 3, answers against PyTorch in float64.
B=scratch/bundle62.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 400 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models t5_encoder,albert,roberta,swin,deit_timm,detr,yolos,resnet50,efficientnet_b0,mobilenet_v3_large,convnext_tiny,regnet_timm \
  --exporters ts --batch-sizes 1,3 --precision fp32 > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^|' $O/zoo/model_zoo.md | cut -c1-700 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
