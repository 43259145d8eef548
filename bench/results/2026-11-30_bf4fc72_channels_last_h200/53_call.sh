#!/bin/bash
# Call 53: channels-last convolutions chosen by counting transposes (Note
# [Channels-last convolutions]): cuda_executor_test and cudnn_conv_test;
# ResNet-50 in float16 against PyTorch's graph and torch.compile
# (reduce-overhead); five more CNNs against PyTorch's graph; runtime_bench
# with --channels-last-convs true and false alternated on the same exports.
B=scratch/slim53.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for t in cudnn_conv_test cuda_executor_test; do
  timeout 200 $bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -E "^\[  FAILED  \]|Failure" -A6 /tmp/$t.txt | head -40 >> $O/summary.txt
done
grep -E "Channels|ConvChain|ConvBlock" /tmp/cuda_executor_test.txt /tmp/cudnn_conv_test.txt | grep -E "OK|FAILED" > $O/layout_tests.txt
timeout 240 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_resnet \
  --models resnet50 --exporters dynamo --batch-sizes 1,8 --precision fp16 --compile-anchor > /tmp/zoo1.txt 2>&1
echo "zoo resnet50 fp16 compile anchor rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo1.txt | cut -c1-900 >> $O/summary.txt
models="efficientnet_b0 mobilenet_v3_large convnext_tiny tv:resnext50_32x4d tv:regnet_y_400mf"
timeout 200 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models ${models// /,} --exporters dynamo --batch-sizes 1,8 --precision fp16 > /tmp/zoo.txt 2>&1
echo "zoo fp16 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-700 >> $O/summary.txt
for round in 1 2; do
  for flag in true false; do
    for m in resnet50 $models; do
      f=/tmp/graphserve-zoo/${m//:/_}_dynamo_fp16
      [ -f $f.onnx ] || continue
      timeout 60 $bin/runtime_bench --model $f.onnx --batch-sizes 1,8 --inputs ${f}_in --iters 200 \
        --channels-last-convs=$flag --json /tmp/rb_${m//:/_}_${flag}_r$round.json > /dev/null 2>&1
      echo "$m channels_last=$flag round $round rc=$? $(python3 -c "import json; print([(r['batch'], r['graph_compute_us']) for r in json.load(open('/tmp/rb_${m//:/_}_${flag}_r$round.json'))])" 2>&1) $(el)" >> $O/summary.txt
    done
  done
done
