#!/bin/bash
# Call 88: the bundle of HEAD (the ensemble's device tensors, the depthwise
# kernel): every GPU test; MobileNetV3-L in float16 (settled BatchNorm
# statistics) with the depthwise convolutions on our kernel and on cuDNN in
# one run, each against PyTorch in float64 (was our kernel the cause of its
# float16 error, 1.7x PyTorch's own, in call 87?).
B=scratch/bundle88.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu
source bench/device_env.sh
gpu_tests 320
for flag in true false; do
  ZOO_MODELS=mobilenet_v3_large,efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=fp16 ZOO_BATCH_SIZES=1,8 \
    ZOO_SETTLE_NORMS=1 ZOO_RUNTIME_FLAGS="--own-depthwise-convs=$flag" \
    timeout 120 bash bench/model_zoo.sh $bin $O/zoo_own_$flag > /tmp/zoo_$flag.txt 2>&1
  echo "zoo fp16 own depthwise $flag rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$flag.txt | cut -c1-700 >> $O/summary.txt
done
tar -C $O -cJf $O/zoo.tar.xz zoo_own_true zoo_own_false && rm -rf $O/zoo_own_true $O/zoo_own_false
echo "done $(el)" >> $O/summary.txt
