#!/bin/bash
# Call 94: pools pass the channels-last layout on (uncommitted, on d7c19d7):
# nn_kernels_test (ChannelsLastPoolTest, ChannelsLastGlobalPoolTest),
# cuda_executor_test, cudnn_conv_test; ResNet-50 float16 (settled
# statistics) at batch 1, 8 and 64 against PyTorch's graph and
# torch.compile's; Inception-v3, DenseNet-121, RegNetY-800MF and
# EfficientNet-B0 in float16 against PyTorch in float64 and its graph; then
# runtime_bench of d7c19d7 (runtime_bench_old) and of this tree, alternated.
B=scratch/slim94.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
for t in nn_kernels_test cuda_executor_test cudnn_conv_test; do
  timeout 200 $bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -E "^\[  FAILED  \]|Failure" -A6 /tmp/$t.txt | head -40 >> $O/summary.txt
done
echo "ChannelsLast pool cases ok: $(grep -cE 'OK \] (Cases|Shapes)/ChannelsLast' /tmp/nn_kernels_test.txt)" >> $O/summary.txt
grep -E "OK \].*ConvChainInEveryLayout" /tmp/cuda_executor_test.txt >> $O/summary.txt
ZOO_MODELS=resnet50 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_SETTLE_NORMS=1 \
  ZOO_COMPILE_ANCHOR=1 timeout 170 bash bench/model_zoo.sh $bin $O/zoo16 > /tmp/zoo16.txt 2>&1
echo "zoo resnet50 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo16.txt | cut -c1-900 >> $O/summary.txt
ZOO_MODELS=tv:inception_v3,tv:densenet121,regnet_timm,efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 \
  ZOO_BATCH_SIZES=1,8 ZOO_SETTLE_NORMS=1 timeout 170 bash bench/model_zoo.sh $bin $O/zoo_others > /tmp/zoo_others.txt 2>&1
echo "zoo others rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_others.txt | cut -c1-700 >> $O/summary.txt
ls /tmp/graphserve-zoo/ | head -30 >> $O/summary.txt
for round in 1 2; do
  for b in runtime_bench runtime_bench_old; do
    for f in /tmp/graphserve-zoo/*_dynamo_fp16.onnx; do
      f=${f%.onnx}; m=$(basename $f)
      bs=1,8; [[ $m == resnet50* ]] && bs=1,8,64
      timeout 40 $bin/$b --model $f.onnx --batch-sizes $bs --inputs ${f}_in --iters 100 \
        --json /tmp/rb_${m}_${b}_r$round.json > /dev/null 2>&1
      echo "$m $b round $round rc=$? $(python3 -c "import json; print([(r['batch'], round(r['graph_compute_us'],1)) for r in json.load(open('/tmp/rb_${m}_${b}_r$round.json'))])" 2>&1 | tail -1) $(el)" >> $O/summary.txt
    done
  done
done
mkdir -p $O/rb && cp /tmp/rb_*.json $O/rb/ 2>/dev/null; tar -C $O -cJf $O/zoo.tar.xz rb zoo16 zoo_others && rm -rf $O/rb $O/zoo16 $O/zoo_others
echo "done $(el)" >> $O/summary.txt
