#!/bin/bash
# Call 47: the bundle of 8891b26: transformers' detectors timed one at a time
# (call 44 ran two probes side by side) with PyTorch's own float32 error:
# DETR, YOLOS, Conditional DETR, Deformable DETR (dynamo); torchvision's
# RetinaNet head through the TorchScript exporter too; two whole torchvision
# detectors (NMS inside) through the TorchScript exporter, for the refusal.
B=scratch/bundle46.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
zoo() {  # tag exporters models seconds
  timeout $4 python3 bench/model_zoo.py --bin $bin --work /tmp/zoo_$1 --out $O/zoo_$1 \
    --models $3 --exporters $2 --batch-sizes 1,8 > /tmp/zoo_$1.txt 2>&1
  echo "zoo $1 rc=$? $(el)" >> $O/summary.txt
  grep '^{' /tmp/zoo_$1.txt | cut -c1-1000 >> $O/summary.txt
}
zoo hf dynamo detr,yolos,conditional_detr,deformable_detr 400
zoo tv ts tvhead:retinanet_resnet50_fpn,tv:retinanet_resnet50_fpn,tv:fasterrcnn_resnet50_fpn $(( 565 - ($(date +%s)-start) ))
