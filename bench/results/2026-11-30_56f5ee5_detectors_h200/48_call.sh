#!/bin/bash
# Call 48: GridSample's kernel with one thread per point and 8 channels
# (runtime_bench and op_kernels_test of this tree; bin_old: bundle 46's, one
# thread per output element): its op kernel cases, then Deformable DETR and
# RT-DETR through the zoo, and both runtime_bench binaries on the same
# exports, alternated; then torchvision's whole detectors (TorchScript
# exporter: NMS inside) for the refusal, and the RetinaNet head again with
# the wrapper in eval mode.
B=scratch/slim47.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 60 $bin/op_kernels_test --gtest_filter='*GridSample*' > $O/op_kernels_gridsample.txt 2>&1
echo "op_kernels_test GridSample rc=$? $(el)" >> $O/summary.txt
grep -E "^\[  (PASSED|FAILED) " $O/op_kernels_gridsample.txt >> $O/summary.txt
timeout 200 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models deformable_detr,rt_detr --exporters dynamo --batch-sizes 1,8 > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^{' /tmp/zoo.txt | cut -c1-1000 >> $O/summary.txt
for round in 1 2; do
  for which in bin_old bin; do
    for m in deformable_detr rt_detr; do
      timeout 60 /tmp/graphserve-gpu/$which/runtime_bench --model /tmp/graphserve-zoo/${m}_dynamo_fp32.onnx \
        --batch-sizes 1,8 --inputs /tmp/graphserve-zoo/${m}_dynamo_fp32_in --iters 50 \
        --json $O/${m}_${which}_r$round.json > /dev/null 2>&1
      echo "$m $which round $round rc=$? $(python3 -c "import json,sys; print([(r['batch'], r['graph_compute_us']) for r in json.load(open('$O/${m}_${which}_r$round.json'))])" 2>&1) $(el)" >> $O/summary.txt
    done
  done
done
left=$(( 560 - ($(date +%s)-start) ))
timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/zoo_tv --out $O/zoo_tv \
  --models tvhead:retinanet_resnet50_fpn,tv:retinanet_resnet50_fpn,tv:fasterrcnn_resnet50_fpn --exporters ts --batch-sizes 1,8 > /tmp/zoo_tv.txt 2>&1
echo "zoo tv rc=$? $(el)" >> $O/summary.txt
grep '^{' /tmp/zoo_tv.txt | cut -c1-1200 >> $O/summary.txt
