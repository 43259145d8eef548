#!/bin/bash
# Call 89: the bundle of a14dd62 (as call 88): ResNet-50 and EfficientNet-B0
# in float16 (settled BatchNorm statistics) at batch 1, 8 and 64 against
# PyTorch's graph and torch.compile's; EfficientNet-B0 in precision auto
# against autocast's graph, after the depthwise kernel.
B=scratch/bundle88.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
ZOO_MODELS=resnet50,efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8,64 \
  ZOO_SETTLE_NORMS=1 ZOO_COMPILE_ANCHOR=1 timeout 330 bash bench/model_zoo.sh $bin $O/zoo16 > /tmp/zoo16.txt 2>&1
echo "zoo fp16 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo16.txt | cut -c1-900 >> $O/summary.txt
ZOO_MODELS=efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=auto-config ZOO_BATCH_SIZES=1,8 \
  ZOO_SETTLE_NORMS=1 ZOO_AUTOCAST_ANCHOR=1 timeout 150 bash bench/model_zoo.sh $bin $O/zoo_auto > /tmp/zoo_auto.txt 2>&1
echo "zoo auto rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo_auto.txt | cut -c1-900 >> $O/summary.txt
grep -o "precision auto keeps [0-9]* nodes[^']*" $O/zoo_auto/model_zoo.log | head -3 >> $O/summary.txt
tar -C $O -cJf $O/zoo.tar.xz zoo16 zoo_auto && rm -rf $O/zoo16 $O/zoo_auto
echo "done $(el)" >> $O/summary.txt
