#!/bin/bash
# Call 77: the bundle of the batch-swapped GEMM operands commit: every GPU
# test (CudaExecutorSwappedOperandsTest's folded heads against the host
# executor among them); float32 bench:encoder (both exporters) at batch 1,
# 8 and 64 against PyTorch's graph; a float32 regression sweep of models with
# batched MatMuls (torchvision ViT-B/16 dynamo; HF ViT, Swin, DETR, GPT-2 and
# T5's encoder, TorchScript) at batch 1 against float64.
B=scratch/bundle77.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
run() {  # tag precision exporters models batches
  left=$(( 585 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$1 \
    --models $4 --exporters $3 --batch-sizes $5 --precision $2 > /tmp/zoo_$1.txt 2>&1
  echo "zoo $1 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1.txt | cut -c1-900 >> $O/summary.txt
}
run encoder fp32 ts,dynamo bench:encoder 1,8,64
run sweep_dynamo fp32 dynamo tv:vit_b_16 1
run sweep_ts fp32 ts vit,swin,detr,gpt2,t5_encoder 1
echo "done $(el)" >> $O/summary.txt
