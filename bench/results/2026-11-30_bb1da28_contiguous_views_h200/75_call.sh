#!/bin/bash
# Call 75: the bundle of the contiguous-views commit: every GPU test (the
# CUDA executor's new CudaExecutorViewTest among them); float32
# bench:encoder (both exporters) and torchvision's ViT-B/16 (its
# nn.MultiheadAttention selects q, k and v by Gather) at batch 1 and 8
# against PyTorch's graph and float64; float16 BERT and GPT-2 as written
# (dynamo) at batch 1 and 8 as a regression check.
B=scratch/bundle75.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
run() {  # precision exporters models batches
  left=$(( 585 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$1_$2 \
    --models $3 --exporters $2 --batch-sizes $4 --precision $1 > /tmp/zoo_$1.txt 2>&1
  echo "zoo $1 $2 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1.txt | cut -c1-900 >> $O/summary.txt
}
run fp32 ts,dynamo bench:encoder,tv:vit_b_16 1,8
run fp16 dynamo bert,gpt2 1,8
echo "done $(el)" >> $O/summary.txt
