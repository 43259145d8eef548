#!/usr/bin/env bash
# Where a model's GPU time goes, kernel by kernel, beside PyTorch's (issue 28).
# On the GPU machine, from the repository root, with a bundle's binaries:
#
#   bench/kernel_profile.sh BIN_DIR OUT_DIR [MODEL] [PRECISION] [EXPORTER]
#
# MODEL is one of bench/model_zoo.py's (default bert), PRECISION fp32, tf32 or
# fp16 (default fp16), EXPORTER dynamo or ts (default dynamo). Exports it, runs the zoo row
# (answers against PyTorch in float64, replay against PyTorch's CUDA graph),
# then at batch 1 and 8: ncu over one bare replay of runtime_bench (its
# "bare replays" NVTX range) and torch.profiler over PyTorch's graph, each
# summarised by kernel family (bench/kernel_profile.py). ncu flushes the
# caches before each kernel, so its times of small kernels read high; compare
# families, and take the model's time from the zoo row.
set -uo pipefail
bin="$1"
out="$2"
model="${3:-bert}"
precision="${4:-fp16}"
exporter="${5:-dynamo}"
mkdir -p "$out"
ZOO_MODELS="$model" ZOO_EXPORTERS="$exporter" ZOO_PRECISION="$precision" \
  bash bench/model_zoo.sh "$bin" "$out/zoo" > "$out/zoo.log" 2>&1
cat "$out/zoo/model_zoo.md"
tag="${model//:/_}_${exporter}_${precision}"  # tv:NAME, timm:NAME as model_zoo.py names files
tf32_flag=$([ "$precision" = tf32 ] && echo --allow-tf32)
for batch in 1 8; do
  ncu --clock-control none --nvtx --nvtx-include "GraphServe@bare replays/" --csv \
    --metrics gpu__time_duration.sum "$bin/runtime_bench" --model "/tmp/graphserve-zoo/$tag.onnx" \
    --batch-sizes "$batch" $tf32_flag --iters 1 --warmup 0 --inputs "/tmp/graphserve-zoo/${tag}_in" \
    > "$out/ncu_b$batch.csv" 2> "$out/ncu_b$batch.err"
  python3 bench/kernel_profile.py ncu "$out/ncu_b$batch.csv" --out "$out/ours_b$batch.json" |
    tee "$out/ours_b$batch.txt" | head -12
  python3 bench/kernel_profile.py torch --model "$model" --precision "$precision" --batch "$batch" \
    --out "$out/torch_b$batch.json" 2>/dev/null | tee "$out/torch_b$batch.txt" | head -12
done
