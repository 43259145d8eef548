#!/bin/bash
# Call 66: the bundle of the commit after eb7d711 (the demo repository's
# configs declared by DeclareConfigFromModel; MakeModelConfig gone): every
# GPU test; the dynamo float16 transformers as written, re-run on the
# repeated-node, Identity and repeated-fold binding; DistilBERT's float32
# export through the fp16 pass; TF32 against PyTorch's TF32 graph;
# `graphserve-capture prepare` (loading as the server does) with --precision
# auto, and with sizes chosen from a history.
B=scratch/bundle66.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
t0=$start
zoo() {  # precision exporters models batches
  left=$(( 540 - ($(date +%s)-t0) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$1_$2 \
    --models $3 --exporters $2 --batch-sizes $4 --precision $1 > /tmp/zoo_$1_$2.txt 2>&1
  echo "zoo $1 $2 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1_$2.txt | cut -c1-900 >> $O/summary.txt
}
zoo fp16 dynamo bert,distilbert,gpt2 1,8,64
zoo fp16-config ts distilbert 1,8
zoo tf32 dynamo resnet50,bert 1,8
cap() {  # name model flags...
  local name=$1 model=$2; shift 2
  timeout 120 $bin/graphserve-capture prepare --model $model --out /tmp/prep/$name "$@" \
    > $O/prepare_$name.txt 2> /tmp/prepare_$name.err
  echo "prepare $name rc=$? $(el)" >> $O/summary.txt
  tail -5 /tmp/prepare_$name.err | cut -c1-400 >> $O/summary.txt
  cp /tmp/prep/$name/config.pbtxt $O/prepare_${name}_config.pbtxt 2>/dev/null
}
cap distilbert_auto /tmp/graphserve-zoo/distilbert_ts_fp16-config.onnx --batch-sizes 1,8 --precision auto
cap resnet50_history /tmp/graphserve-zoo/resnet50_dynamo_tf32.onnx --history bench/histories/recsys_requests.txt \
  --num-sizes 4 --max-batch-size 64 --precision tf32
echo "done $(el)" >> $O/summary.txt
