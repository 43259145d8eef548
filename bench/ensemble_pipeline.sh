#!/usr/bin/env bash
# gpu_check.sh BUNDLE ensemble: the pipeline GPU tests, then an ensemble of a
# preprocessing model and a torchvision CNN replayed as one CUDA graph,
# against the same ensemble step by step and the two models called one after
# the other (bench/ensemble_bench.cc), and PyTorch's CUDA graph of the same
# two stages for scale (bench/ensemble_pipeline.py). ENSEMBLE_CNNS narrows
# the CNNs (default resnet50,resnet18).
#
#   bench/ensemble_pipeline.sh BIN_DIR OUT_DIR
set -uo pipefail
bin="$1"
out="$2"
status=0
"$bin/pipeline_graphs_test" || status=1
"$bin/ensemble_pipeline_test" || status=1
python3 bench/ensemble_pipeline.py --bin "$bin" --work /tmp/graphserve-ensemble --out "$out" \
  --cnns "${ENSEMBLE_CNNS:-resnet50,resnet18}" || status=1
exit "$status"
