#!/bin/bash
# Call 90: c4dd9f1. ensemble_pipeline_test (the ensemble's step tensors
# after the load summary's refactor); where ResNet-50's float16 time goes
# at batch 64 (torch.compile 1.53x faster in call 89): ncu over one bare
# replay of ours, torch.profiler over torch.compile's graphs; BERT and ViT
# in float16 at batch 1, 8, 64 against PyTorch's graph and torch.compile's.
B=scratch/slim90.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
timeout 120 $bin/ensemble_pipeline_test > $O/ensemble_pipeline_test.txt 2>&1
echo "ensemble_pipeline_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $O/ensemble_pipeline_test.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
ZOO_MODELS=resnet50 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=64 ZOO_SETTLE_NORMS=1 \
  timeout 120 bash bench/model_zoo.sh $bin $O/zoo_r50 > /tmp/zoo_r50.txt 2>&1
echo "zoo resnet50 b64 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_r50.txt | cut -c1-600 >> $O/summary.txt
tag=resnet50_dynamo_fp16
timeout 150 ncu --clock-control none --nvtx --nvtx-include "GraphServe@bare replays/" --csv \
  --metrics gpu__time_duration.sum $bin/runtime_bench --model /tmp/graphserve-zoo/$tag.onnx \
  --batch-sizes 64 --iters 1 --warmup 0 --inputs /tmp/graphserve-zoo/${tag}_in > /tmp/ncu_b64.csv 2> $O/ncu_b64.err
echo "ncu rc=$? $(el)" >> $O/summary.txt
python3 bench/kernel_profile.py ncu /tmp/ncu_b64.csv --out /tmp/ours_b64.json > $O/ours_b64.txt 2>&1
head -24 $O/ours_b64.txt >> $O/summary.txt
timeout 200 python3 bench/kernel_profile.py torch --compile --model resnet50 --precision fp16 --batch 64 \
  --out /tmp/compile_b64.json > $O/compile_b64.txt 2>/dev/null
echo "compile profile rc=$? $(el)" >> $O/summary.txt
head -24 $O/compile_b64.txt >> $O/summary.txt
ZOO_MODELS=bert,vit ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 ZOO_COMPILE_ANCHOR=1 \
  timeout 240 bash bench/model_zoo.sh $bin $O/zoo_tf > /tmp/zoo_tf.txt 2>&1
echo "zoo bert,vit rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_tf.txt | cut -c1-900 >> $O/summary.txt
xz -9c /tmp/ncu_b64.csv > $O/ncu_b64.csv.xz
tar -C $O -cJf $O/zoo.tar.xz zoo_r50 zoo_tf && rm -rf $O/zoo_r50 $O/zoo_tf
echo "done $(el)" >> $O/summary.txt
