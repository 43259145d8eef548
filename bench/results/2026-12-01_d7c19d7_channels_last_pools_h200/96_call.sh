#!/bin/bash
# Call 96: the depthwise kernel reading its input through shared memory
# (uncommitted, on 371f5f7): nn_kernels_test (DepthwiseConvTest's new
# shapes), cuda_executor_test; EfficientNet-B0 float16 (settled statistics)
# at batch 1, 8 and 64 against PyTorch's graph and torch.compile's, and
# MobileNetV3-L against PyTorch's graph; runtime_bench of 371f5f7
# (runtime_bench_old) and of this tree, alternated, two rounds; ncu over one
# bare replay of EfficientNet-B0 at batch 64.
B=scratch/slim96.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
for t in nn_kernels_test cuda_executor_test; do
  timeout 150 $bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ' | cut -c1-300) $(el)" >> $O/summary.txt
  grep -E "^\[  FAILED  \]|Failure" -A6 /tmp/$t.txt | cut -c1-300 | head -30 >> $O/summary.txt
done
echo "DepthwiseConvTest ok: $(grep -cE 'OK \] .*DepthwiseConvTest' /tmp/nn_kernels_test.txt)" >> $O/summary.txt
ZOO_MODELS=efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_SETTLE_NORMS=1 \
  ZOO_COMPILE_ANCHOR=1 timeout 150 bash bench/model_zoo.sh $bin $O/zoo_eff > /tmp/zoo_eff.txt 2>&1
echo "zoo efficientnet rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_eff.txt | cut -c1-900 >> $O/summary.txt
ZOO_MODELS=mobilenet_v3_large ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_SETTLE_NORMS=1 \
  timeout 100 bash bench/model_zoo.sh $bin $O/zoo_mnv3 > /tmp/zoo_mnv3.txt 2>&1
echo "zoo mobilenet rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_mnv3.txt | cut -c1-700 >> $O/summary.txt
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
tag=efficientnet_b0_dynamo_fp16
timeout 100 ncu --clock-control none --nvtx --nvtx-include "GraphServe@bare replays/" --csv \
  --metrics gpu__time_duration.sum $bin/runtime_bench --model /tmp/graphserve-zoo/$tag.onnx \
  --batch-sizes 64 --iters 1 --warmup 0 --inputs /tmp/graphserve-zoo/${tag}_in > /tmp/ncu_b64.csv 2> $O/ncu_b64.err
echo "ncu rc=$? $(el)" >> $O/summary.txt
python3 bench/kernel_profile.py ncu /tmp/ncu_b64.csv --out /tmp/ours_b64.json > $O/ours_b64.txt 2>&1
head -12 $O/ours_b64.txt >> $O/summary.txt
xz -9c /tmp/ncu_b64.csv > $O/ncu_b64.csv.xz
mkdir -p $O/rb && cp /tmp/rb_*.json $O/rb/ 2>/dev/null; tar -C $O -cJf $O/zoo.tar.xz rb zoo_eff zoo_mnv3 && rm -rf $O/rb $O/zoo_eff $O/zoo_mnv3
echo "done $(el)" >> $O/summary.txt
