#!/bin/bash
# Call 99: the depthwise kernel computing 8 rows a thread instead of 4
# (uncommitted, on 4dc21e3): nn_kernels_test; runtime_bench of 4dc21e3
# (runtime_bench_old) and of this tree, alternated, two rounds, on
# EfficientNet-B0 and MobileNetV3-L in float16 at batch 1, 8 and 64.
B=scratch/slim99.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
timeout 100 $bin/nn_kernels_test > /tmp/nn_kernels_test.txt 2>&1
echo "nn_kernels_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/nn_kernels_test.txt | tr '\n' ' ' | cut -c1-300) $(el)" >> $O/summary.txt
ZOO_MODELS=efficientnet_b0,mobilenet_v3_large ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1 ZOO_SETTLE_NORMS=1 \
  timeout 120 bash bench/model_zoo.sh $bin $O/zoo > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-500 >> $O/summary.txt
for round in 1 2; do
  for b in runtime_bench runtime_bench_old; do
    for m in efficientnet_b0 mobilenet_v3_large; do
      f=/tmp/graphserve-zoo/${m}_dynamo_fp16
      [ -f $f.onnx ] || continue
      timeout 40 $bin/$b --model $f.onnx --batch-sizes 1,8,64 --inputs ${f}_in --iters 100 \
        --json /tmp/rb_${m}_${b}_r$round.json > /dev/null 2>&1
      echo "$m $b round $round rc=$? $(python3 -c "import json; print([(r['batch'], round(r['graph_compute_us'],1)) for r in json.load(open('/tmp/rb_${m}_${b}_r$round.json'))])" 2>&1 | tail -1) $(el)" >> $O/summary.txt
    done
  done
done
rm -rf $O/zoo
echo "done $(el)" >> $O/summary.txt
