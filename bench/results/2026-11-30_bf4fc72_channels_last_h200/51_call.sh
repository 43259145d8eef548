#!/bin/bash
# Call 51: channels-last convolutions (Note [Channels-last convolutions]):
# the GPU tests they touch (cudnn_conv_test, cuda_executor_test,
# nn_kernels_test, weight_store_test), then ResNet-50 / EfficientNet-B0 /
# MobileNetV3 in float16 through the zoo (error vs float64, replay vs
# PyTorch's graph), and runtime_bench with --channels-last-convs true/false
# alternated on the same exports, at batch 1 and 8.
B=scratch/slim51.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for t in weight_store_test nn_kernels_test cudnn_conv_test cuda_executor_test; do
  timeout 200 $bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -E "^\[  FAILED  \]|Failure" -A6 /tmp/$t.txt | head -40 >> $O/summary.txt
done
cat /tmp/cudnn_conv_test.txt /tmp/cuda_executor_test.txt | xz > $O/gpu_tests.txt.xz
timeout 260 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models resnet50,efficientnet_b0,mobilenet_v3_large --exporters dynamo --batch-sizes 1,8 \
  --precision fp16 > /tmp/zoo.txt 2>&1
echo "zoo fp16 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-700 >> $O/summary.txt
for round in 1 2; do
  for cl in true false; do
    for m in resnet50 efficientnet_b0 mobilenet_v3_large; do
      f=/tmp/graphserve-zoo/${m}_dynamo_fp16
      timeout 60 $bin/runtime_bench --model $f.onnx --batch-sizes 1,8 --inputs ${f}_in --iters 200 \
        --channels-last-convs=$cl --json /tmp/rb_${m}_${cl}_r$round.json > /dev/null 2>&1
      echo "$m channels_last=$cl round $round rc=$? $(python3 -c "import json; print([(r['batch'], r['graph_compute_us']) for r in json.load(open('/tmp/rb_${m}_${cl}_r$round.json'))])" 2>&1) $(el)" >> $O/summary.txt
    done
  done
done
tar -C /tmp -cJf $O/runtime_bench_json.tar.xz $(cd /tmp && ls rb_*.json)
