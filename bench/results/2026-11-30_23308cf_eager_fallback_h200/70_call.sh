#!/bin/bash
# Call 70: issue 28's torch.compile anchor re-measured on the bundle of call 69:
# the model zoo in float16 (dynamo .half() exports as written) with
# --compile-anchor, ViT-B/16, EfficientNet-B0 and DistilBERT at batch 1 and 8.
B=scratch/bundle69.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
timeout 540 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out /tmp/zoo \
  --models vit,efficientnet_b0,distilbert --exporters dynamo --batch-sizes 1,8 --precision fp16 \
  --compile-anchor > /tmp/zoo.txt 2>&1
echo "zoo fp16 dynamo compile-anchor rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-1200 >> $O/summary.txt
grep '^{' /tmp/zoo.txt | cut -c1-1500 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
