#!/bin/bash
# Call 91: the 16-bit epilogue eight elements a thread and the pool without
# divisions (uncommitted, after 4b... on c4dd9f1's tree): nn_kernels_test
# (the new HalfEpilogueTest cases), cuda_executor_test, cudnn_conv_test;
# then runtime_bench of c4dd9f1 (runtime_bench_old) and of this tree,
# alternated, two rounds, on ResNet-50, EfficientNet-B0 and MobileNetV3-L in
# float16 (settled statistics) at batch 1, 8 and 64, and the zoo's answers
# against PyTorch in float64 and its graph with the new binary.
B=scratch/slim91.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
for t in nn_kernels_test cuda_executor_test cudnn_conv_test; do
  timeout 200 $bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -E "^\[  FAILED  \]|Failure" -A6 /tmp/$t.txt | head -40 >> $O/summary.txt
done
echo "HalfEpilogueTest ok: $(grep -cE 'OK \] Cases/HalfEpilogueTest' /tmp/nn_kernels_test.txt)" >> $O/summary.txt
models=resnet50,efficientnet_b0,mobilenet_v3_large
ZOO_MODELS=$models ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_SETTLE_NORMS=1 \
  timeout 200 bash bench/model_zoo.sh $bin $O/zoo > /tmp/zoo.txt 2>&1
echo "zoo fp16 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-700 >> $O/summary.txt
for round in 1 2; do
  for b in runtime_bench runtime_bench_old; do
    for m in resnet50 efficientnet_b0 mobilenet_v3_large; do
      f=/tmp/graphserve-zoo/${m}_dynamo_fp16
      [ -f $f.onnx ] || continue
      timeout 60 $bin/$b --model $f.onnx --batch-sizes 1,8,64 --inputs ${f}_in --iters 100 \
        --json /tmp/rb_${m}_${b}_r$round.json > /dev/null 2>&1
      echo "$m $b round $round rc=$? $(python3 -c "import json; print([(r['batch'], round(r['graph_compute_us'],1)) for r in json.load(open('/tmp/rb_${m}_${b}_r$round.json'))])" 2>&1) $(el)" >> $O/summary.txt
    done
  done
done
mkdir -p $O/rb && cp /tmp/rb_*.json $O/rb/ && tar -C $O -cJf $O/rb.tar.xz rb zoo && rm -rf $O/rb $O/zoo
echo "done $(el)" >> $O/summary.txt
