#!/usr/bin/env bash
# gpu_check.sh BUNDLE zoo: bench/model_zoo.py on the bundle's runtime_bench.
# ZOO_MODELS and ZOO_EXPORTERS (comma-separated) narrow it when time is short;
# ZOO_MODELS also takes tv:NAME and timm:NAME (any torchvision or timm image
# model) and bench:NAME (bench/export_models.py's: bench:mlp,
# bench:dlrm_dense, bench:encoder, ...);
# ZOO_PRECISION=fp16 exports and runs the models in half precision, and
# fp16-config / bf16-config serve the float32 export in that precision by our
# precision pass (each row also gives the error against the load check's
# independent reference), fp16-half-config the .half() export (TorchScript's
# computes in float32 as written: each row counts the file's GEMMs by dtype); ZOO_EXPORTERS=newest adds a model saved by the
# newest onnx;
# ZOO_DYNAMIC_SEQUENCE=1 exports text models with a dynamic sequence dim too
# and captures them at the inputs' length (a shape bucket); ZOO_OPSET=23
# sets the dynamo exporter's opset; ZOO_BATCH_SIZES (default 1,3,8) the
# batch sizes; ZOO_COMPILE_ANCHOR=1 also times torch.compile's reduce-overhead
# mode (the stronger anchor); ZOO_AUTOCAST_ANCHOR=1 also times PyTorch's graph
# of the float32 model under torch.autocast (the anchor for auto-config);
# ZOO_SETTLE_NORMS=1 sets BatchNorm statistics from random batches first, so a
# CNN's activations have a trained model's scale (settle_norm_statistics);
# ZOO_RUNTIME_FLAGS passes more flags to runtime_bench.
#
#   bench/model_zoo.sh BIN_DIR OUT_DIR
set -uo pipefail
bin="$1"
out="$2"
args=(--bin "$bin" --work /tmp/graphserve-zoo --out "$out")
if [[ -n "${ZOO_MODELS:-}" ]]; then args+=(--models "$ZOO_MODELS"); fi
if [[ -n "${ZOO_EXPORTERS:-}" ]]; then args+=(--exporters "$ZOO_EXPORTERS"); fi
if [[ -n "${ZOO_PRECISION:-}" ]]; then args+=(--precision "$ZOO_PRECISION"); fi
if [[ -n "${ZOO_DYNAMIC_SEQUENCE:-}" ]]; then args+=(--dynamic-sequence); fi
if [[ -n "${ZOO_OPSET:-}" ]]; then args+=(--opset "$ZOO_OPSET"); fi
if [[ -n "${ZOO_BATCH_SIZES:-}" ]]; then args+=(--batch-sizes "$ZOO_BATCH_SIZES"); fi
if [[ -n "${ZOO_COMPILE_ANCHOR:-}" ]]; then args+=(--compile-anchor); fi
if [[ -n "${ZOO_AUTOCAST_ANCHOR:-}" ]]; then args+=(--autocast-anchor); fi
if [[ -n "${ZOO_SETTLE_NORMS:-}" ]]; then args+=(--settle-norms); fi
if [[ -n "${ZOO_RUNTIME_FLAGS:-}" ]]; then args+=("--runtime-flags=$ZOO_RUNTIME_FLAGS"); fi
python3 bench/model_zoo.py "${args[@]}"
