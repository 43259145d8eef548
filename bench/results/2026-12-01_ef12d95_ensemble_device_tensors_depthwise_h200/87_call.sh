#!/bin/bash
# Call 87: depthwise convolutions on our own kernel (Note [Depthwise
# convolutions] in runtime/cuda/nn_kernels.cu, uncommitted tree after
# ef12d95): nn_kernels_test, cuda_executor_test, cudnn_conv_test; the zoo in
# float16 (settled BatchNorm statistics) with the torch.compile anchor for
# EfficientNet-B0 and MobileNetV3-L, and float32 against PyTorch in float64;
# runtime_bench --own-depthwise-convs true/false alternated, two rounds.
B=scratch/slim87.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
for t in nn_kernels_test cuda_executor_test cudnn_conv_test; do
  timeout 200 $bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -E "^\[  FAILED  \]|Failure" -A6 /tmp/$t.txt | head -40 >> $O/summary.txt
done
grep -cE "Depthwise.*OK" /tmp/nn_kernels_test.txt >> $O/summary.txt
grep -E "CudaExecutorCnnTest|HalfModel.*ConvChain" /tmp/cuda_executor_test.txt | grep -E "OK|FAILED" >> $O/summary.txt
models=efficientnet_b0,mobilenet_v3_large
ZOO_MODELS=$models ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8 ZOO_COMPILE_ANCHOR=1 \
  ZOO_SETTLE_NORMS=1 timeout 240 bash bench/model_zoo.sh $bin $O/zoo16 > /tmp/zoo16.txt 2>&1
echo "zoo fp16 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo16.txt | cut -c1-900 >> $O/summary.txt
ZOO_MODELS=$models ZOO_EXPORTERS=dynamo ZOO_BATCH_SIZES=1,8 ZOO_SETTLE_NORMS=1 \
  timeout 150 bash bench/model_zoo.sh $bin $O/zoo32 > /tmp/zoo32.txt 2>&1
echo "zoo fp32 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo32.txt | cut -c1-700 >> $O/summary.txt
for round in 1 2; do
  for flag in true false; do
    for m in efficientnet_b0_dynamo_fp16 mobilenet_v3_large_dynamo_fp16 efficientnet_b0_dynamo_fp32 mobilenet_v3_large_dynamo_fp32; do
      f=/tmp/graphserve-zoo/$m
      [ -f $f.onnx ] || continue
      timeout 60 $bin/runtime_bench --model $f.onnx --batch-sizes 1,8 --inputs ${f}_in --iters 200 \
        --own-depthwise-convs=$flag --json /tmp/rb_${m}_${flag}_r$round.json > /dev/null 2>&1
      echo "$m own_depthwise=$flag round $round rc=$? $(python3 -c "import json; print([(r['batch'], round(r['graph_compute_us'],1), r.get('graph_rel_err_vs_eager')) for r in json.load(open('/tmp/rb_${m}_${flag}_r$round.json'))])" 2>&1) $(el)" >> $O/summary.txt
    done
  done
done
mkdir -p $O/rb && cp /tmp/rb_*.json $O/rb/ 2>/dev/null
echo "done $(el)" >> $O/summary.txt
