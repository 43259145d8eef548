#!/bin/bash
# Call 78: the bundle of the unit-dim Transpose aliases commit: every GPU
# test; float32 bench:encoder (both exporters) at batch 1 and 8 against
# PyTorch's graph; a regression sweep at batch 1 (float32 TorchScript HF
# ViT, Swin, GPT-2; float16 dynamo ResNet-50, BERT, EfficientNet-B0).
B=scratch/bundle78.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
run() {  # tag precision exporters models batches
  left=$(( 500 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out /tmp/zoo_$1 \
    --models $4 --exporters $3 --batch-sizes $5 --precision $2 > /tmp/zoo_$1.txt 2>&1
  echo "zoo $1 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1.txt | grep -v "^| model\|^|---" | cut -c1-900 >> $O/summary.txt
}
run encoder fp32 ts,dynamo bench:encoder 1,8
run sweep_ts fp32 ts vit,swin,gpt2 1
run sweep_fp16 fp16 dynamo resnet50,bert,efficientnet_b0 1
cp /tmp/zoo_encoder/model_zoo.json $O/model_zoo_encoder.json 2>/dev/null
echo "done $(el)" >> $O/summary.txt
