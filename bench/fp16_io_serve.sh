#!/usr/bin/env bash
# A model served with FP16 I/O against the same model in float32 (issue 28:
# "served at concurrency 1 and saturated with FP16 I/O: half the bytes on the
# wire"). On the GPU machine, from the repository root, after bench/model_zoo.sh
# has exported ViT-B/16 with the dynamo exporter in both precisions (its
# /tmp/graphserve-zoo/vit_dynamo_{fp32,fp16}.onnx):
#
#   bench/fp16_io_serve.sh BIN_DIR OUT_DIR
#
# Each model is served alone by graphserve on CUDA (max_batch_size 8, dynamic
# batching, default capture sizes) and driven by graphserve-client perf with
# batch-1 requests at concurrency 1 and 16, over gRPC on this machine. Prints
# each level's throughput and latency (perf's CSV under OUT_DIR) and the bytes
# one request and its response carry in tensor data.
set -uo pipefail
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@"
zoo=/tmp/graphserve-zoo

repo="$work/repo"
for precision in fp32 fp16; do
  model="$zoo/vit_dynamo_$precision.onnx"
  if [[ ! -f "$model" ]]; then
    echo "fp16_io_serve: $model is missing (run bench/model_zoo.sh with vit first)"
    exit 1
  fi
  mkdir -p "$repo/vit_$precision/1"
  cp "$model" "$repo/vit_$precision/1/model.onnx"
  type=$([[ $precision == fp16 ]] && echo TYPE_FP16 || echo TYPE_FP32)
  cat >"$repo/vit_$precision/config.pbtxt" <<EOF
name: "vit_$precision"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "pixel_values" data_type: $type dims: [ 3, 224, 224 ] } ]
output [ { name: "y" data_type: $type dims: [ 197, 768 ] } ]
dynamic_batching { }
EOF
done

for precision in fp32 fp16; do
  element=$([[ $precision == fp16 ]] && echo 2 || echo 4)
  echo "== vit_$precision: a request carries $((3 * 224 * 224 * element)) bytes of pixels," \
       "its response $((197 * 768 * element)) bytes of y"
  start_server "$repo" --model-control-mode explicit --load-model "vit_$precision" >/dev/null ||
    continue
  "$bin/graphserve-client" perf --model "vit_$precision" --batch-size 1 --concurrency 1,16 \
    --csv "$out/perf_vit_$precision.csv" 2>&1 | tail -n 12
  ((PIPESTATUS[0] == 0)) || failures=$((failures + 1))
  stop_server
done
exit "$failures"
