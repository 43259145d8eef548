#!/bin/bash
# Call 45: the bundle of 7309fbf (GridSample): op_kernels_test's GridSample
# cases on the GPU (every GPU test runs in call 46, on the next bundle), then
# the zoo's detectors with deformable attention (RT-DETR, Deformable DETR,
# D-FINE: GridSample) and torchvision's four detection heads, dynamo
# exporter, float32, batch 1 and 8, one probe at a time.
B=scratch/bundle45.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
echo "untar $(el)" >> $O/summary.txt
timeout 120 $bin/op_kernels_test --gtest_filter='*GridSample*' > $O/op_kernels_gridsample.txt 2>&1
echo "op_kernels_test GridSample rc=$? $(el)" >> $O/summary.txt
grep -E "^\[  (PASSED|FAILED|SKIPPED) " $O/op_kernels_gridsample.txt >> $O/summary.txt
timeout 120 $bin/onnx_conformance --executor=cuda --data /tmp/graphserve-gpu/testdata/node > /tmp/conf.txt 2>&1
echo "conformance cuda rc=$? $(el)" >> $O/summary.txt
grep -i "gridsample" /tmp/conf.txt | head -20 >> $O/summary.txt
tail -3 /tmp/conf.txt >> $O/summary.txt
left=$(( 560 - ($(date +%s)-start) ))
timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models rt_detr,deformable_detr,d_fine,tvhead:retinanet_resnet50_fpn,tvhead:fcos_resnet50_fpn,tvhead:ssd300_vgg16,tvhead:ssdlite320_mobilenet_v3_large \
  --exporters dynamo --batch-sizes 1,8 > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^{' /tmp/zoo.txt | cut -c1-900 >> $O/summary.txt
