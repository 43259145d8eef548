#!/bin/bash
# Call 95: 371f5f7. nn_kernels_test (ChannelsLastPoolTest's cases now always
# see a NaN); EfficientNet-B0, BERT-base and DistilBERT in float16 at batch
# 1, 8 and 64 against PyTorch's graph and torch.compile's, same run; where
# EfficientNet-B0's batch-64 time goes: ncu over one bare replay of ours,
# torch.profiler over torch.compile's graphs.
B=scratch/slim95.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
timeout 100 $bin/nn_kernels_test > /tmp/nn_kernels_test.txt 2>&1
echo "nn_kernels_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/nn_kernels_test.txt | tr '\n' ' ' | cut -c1-300) $(el)" >> $O/summary.txt
echo "ChannelsLast pool cases ok: $(grep -cE 'OK \] (Cases|Shapes)/ChannelsLast' /tmp/nn_kernels_test.txt)" >> $O/summary.txt
ZOO_MODELS=efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_SETTLE_NORMS=1 \
  ZOO_COMPILE_ANCHOR=1 timeout 150 bash bench/model_zoo.sh $bin $O/zoo_cnn > /tmp/zoo_cnn.txt 2>&1
echo "zoo efficientnet rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_cnn.txt | cut -c1-900 >> $O/summary.txt
tag=efficientnet_b0_dynamo_fp16
timeout 100 ncu --clock-control none --nvtx --nvtx-include "GraphServe@bare replays/" --csv \
  --metrics gpu__time_duration.sum $bin/runtime_bench --model /tmp/graphserve-zoo/$tag.onnx \
  --batch-sizes 64 --iters 1 --warmup 0 --inputs /tmp/graphserve-zoo/${tag}_in > /tmp/ncu_b64.csv 2> $O/ncu_b64.err
echo "ncu rc=$? $(el)" >> $O/summary.txt
python3 bench/kernel_profile.py ncu /tmp/ncu_b64.csv --out /tmp/ours_b64.json > $O/ours_b64.txt 2>&1
head -30 $O/ours_b64.txt >> $O/summary.txt
timeout 120 python3 bench/kernel_profile.py torch --compile --model efficientnet_b0 --precision fp16 --batch 64 \
  --out /tmp/compile_b64.json > $O/compile_b64.txt 2>/dev/null
echo "compile profile rc=$? $(el)" >> $O/summary.txt
head -30 $O/compile_b64.txt >> $O/summary.txt
ZOO_MODELS=bert,distilbert ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_COMPILE_ANCHOR=1 \
  timeout 220 bash bench/model_zoo.sh $bin $O/zoo_tf > /tmp/zoo_tf.txt 2>&1
echo "zoo bert,distilbert rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_tf.txt | cut -c1-900 >> $O/summary.txt
xz -9c /tmp/ncu_b64.csv > $O/ncu_b64.csv.xz
tar -C $O -cJf $O/zoo.tar.xz zoo_cnn zoo_tf && rm -rf $O/zoo_cnn $O/zoo_tf
echo "done $(el)" >> $O/summary.txt
