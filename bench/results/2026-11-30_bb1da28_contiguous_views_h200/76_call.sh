#!/bin/bash
# Call 76: issue 28's anchors re-measured on the bundle of call 75 (bb1da28):
# EfficientNet-B0 with precision auto against PyTorch's autocast graph
# (--autocast-anchor), then ResNet-50 and BERT in float16 (dynamo .half()
# exports as written) against torch.compile's reduce-overhead graph
# (--compile-anchor), batch 1 and 8.
B=scratch/bundle75.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
timeout 150 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/auto \
  --models efficientnet_b0 --exporters dynamo --batch-sizes 1,8 --precision auto-config \
  --autocast-anchor > /tmp/zoo_auto.txt 2>&1
echo "zoo auto-config autocast-anchor rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_auto.txt | cut -c1-1200 >> $O/summary.txt
timeout $(( 570 - ($(date +%s)-start) )) python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo \
  --out $O/compile --models resnet50,bert --exporters dynamo --batch-sizes 1,8 --precision fp16 \
  --compile-anchor > /tmp/zoo.txt 2>&1
echo "zoo fp16 dynamo compile-anchor rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-1200 >> $O/summary.txt
grep '^{' /tmp/zoo.txt | cut -c1-1500 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
