#!/bin/bash
# Call 43: segmentation heads (issue 27 names them): torchvision's
# DeepLabV3 (MobileNetV3-Large), LR-ASPP and FCN (ResNet-50), float32,
# dynamo exporter, batch 1 and 8, runtime_bench of 29761b2.
B=scratch/slim41.tar.xz  # bin/runtime_bench, lib (29761b2)
O=$OUT
start=$(date +%s)
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 230 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models tv:lraspp_mobilenet_v3_large,tv:deeplabv3_mobilenet_v3_large,tv:fcn_resnet50 \
  --exporters dynamo --batch-sizes 1,8 > /tmp/zoo.txt 2>&1
echo "zoo segmentation rc=$? after $(( $(date +%s)-start )) s" >> $O/summary.txt
grep -E "^\| tv:" /tmp/zoo.txt | cut -c1-1500 >> $O/summary.txt
grep -E '^\{' /tmp/zoo.txt | cut -c1-600 >> $O/summary.txt
