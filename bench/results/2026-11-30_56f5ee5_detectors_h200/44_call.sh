#!/bin/bash
# Call 44: issue 27's detection heads, first look. transformers' DETR, YOLOS,
# RT-DETR, Conditional DETR (one box per query, no NMS); torchvision's
# RetinaNet, FCOS, SSD300, SSDlite heads (backbone + head, raw outputs); two
# whole torchvision detectors (NMS inside). Dynamo exporter, batch 1 and 8,
# runtime_bench of 29761b2 (slim41). Two probes run side by side: timings
# here are not for comparison.
B=scratch/slim41.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
python3 -c 'import torch, torchvision, transformers, timm, onnx; print(torch.__version__, torchvision.__version__, transformers.__version__, onnx.__version__)' >> $O/summary.txt 2>&1
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
zoo() {  # tag models
  timeout 500 python3 bench/model_zoo.py --bin $bin --work /tmp/zoo_$1 --out $O/zoo_$1 \
    --models $2 --exporters dynamo --batch-sizes 1,8 > /tmp/zoo_$1.txt 2>&1
  echo "zoo $1 rc=$? $(el)" >> $O/summary.txt
}
zoo hf detr,yolos,rt_detr,conditional_detr &
zoo tv tvhead:retinanet_resnet50_fpn,tvhead:fcos_resnet50_fpn,tvhead:ssd300_vgg16,tvhead:ssdlite320_mobilenet_v3_large,tv:retinanet_resnet50_fpn,tv:fasterrcnn_resnet50_fpn &
wait
for t in hf tv; do grep '^{' /tmp/zoo_$t.txt | cut -c1-900 >> $O/summary.txt; done
