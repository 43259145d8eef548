#!/bin/bash
# Call 97: why 371f5f7's depthwise kernel runs at a fraction of the memory
# bandwidth at batch 64 (call 95): ncu's speed-of-light, occupancy, warp
# state and memory sections over EfficientNet-B0's first four depthwise
# convolutions in float16 at batch 64 (runtime_bench_old of slim96 is
# 371f5f7's).
B=scratch/slim96.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
ZOO_MODELS=efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=64 ZOO_SETTLE_NORMS=1 \
  timeout 120 bash bench/model_zoo.sh $bin $O/zoo_eff > /tmp/zoo_eff.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
tag=efficientnet_b0_dynamo_fp16
timeout 200 ncu --clock-control none --nvtx --nvtx-include "GraphServe@bare replays/" \
  --kernel-name regex:Depthwise --launch-count 4 --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section SchedulerStats \
  $bin/runtime_bench_old --model /tmp/graphserve-zoo/$tag.onnx \
  --batch-sizes 64 --iters 1 --warmup 0 --inputs /tmp/graphserve-zoo/${tag}_in > $O/ncu_depthwise.txt 2> $O/ncu.err
echo "ncu rc=$? $(el)" >> $O/summary.txt
rm -rf $O/zoo_eff
echo "done $(el)" >> $O/summary.txt
