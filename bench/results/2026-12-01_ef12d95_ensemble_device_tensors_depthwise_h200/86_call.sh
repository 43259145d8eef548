#!/bin/bash
# Call 86: where EfficientNet-B0's float16 time goes at batch 8, ours against
# torch.compile's (issue 28's one missed compile anchor): the zoo row
# (float16 export, settled BatchNorm statistics, the compile anchor), ncu over
# one bare replay of runtime_bench, torch.profiler over torch.compile's
# graphs and over PyTorch's plain graph.
B=scratch/bundle85.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
ZOO_MODELS=efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8 \
  ZOO_COMPILE_ANCHOR=1 ZOO_SETTLE_NORMS=1 timeout 300 bash bench/model_zoo.sh $bin $O/zoo > $O/zoo.log 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
cat $O/zoo/model_zoo.md >> $O/summary.txt 2>/dev/null
tag=efficientnet_b0_dynamo_fp16
timeout 150 ncu --clock-control none --nvtx --nvtx-include "GraphServe@bare replays/" --csv \
  --metrics gpu__time_duration.sum $bin/runtime_bench --model /tmp/graphserve-zoo/$tag.onnx \
  --batch-sizes 8 --iters 1 --warmup 0 --inputs /tmp/graphserve-zoo/${tag}_in > $O/ncu_b8.csv 2> $O/ncu_b8.err
echo "ncu rc=$? $(el)" >> $O/summary.txt
python3 bench/kernel_profile.py ncu $O/ncu_b8.csv --out $O/ours_b8.json > $O/ours_b8.txt 2>&1
head -30 $O/ours_b8.txt >> $O/summary.txt
timeout 200 python3 bench/kernel_profile.py torch --compile --model efficientnet_b0 --precision fp16 --batch 8 \
  --out $O/compile_b8.json > $O/compile_b8.txt 2>$O/compile_b8.err
echo "compile profile rc=$? $(el)" >> $O/summary.txt
head -30 $O/compile_b8.txt >> $O/summary.txt
tail -5 $O/compile_b8.err >> $O/summary.txt
timeout 100 python3 bench/kernel_profile.py torch --model efficientnet_b0 --precision fp16 --batch 8 \
  --out $O/torch_b8.json > $O/torch_b8.txt 2>/dev/null
head -16 $O/torch_b8.txt >> $O/summary.txt
xz -9 $O/ncu_b8.csv $O/zoo/model_zoo.log 2>/dev/null
echo "done $(el)" >> $O/summary.txt
