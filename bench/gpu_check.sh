#!/usr/bin/env bash
# Runs on the H200 machine: the GPU unit tests, the ONNX conformance suite on
# the CUDA executor, the example models, and the runtime benchmark against
# PyTorch. Everything it prints is also written under $OUT (or ./out).
#
#   bench/gpu_check.sh [.bundle/graphserve-gpu.tar.gz] [all|serve]
#
# `serve` runs the GPU tests (the server's end-to-end suite on CUDA graphs
# among them) and the serving benchmarks only; `all` (the default) adds the
# conformance suite, the runtime benchmark against PyTorch and prepare.
set -uo pipefail
cd "$(dirname "$0")/.."
bundle_tar="${1:-.bundle/graphserve-gpu.tar.gz}"
steps="${2:-all}"
# The server's end-to-end suite runs on the CUDA executor here.
export GRAPHSERVE_E2E_DEVICE=cuda
OUT="${OUT:-$PWD/out}"
mkdir -p "$OUT"
work=/tmp/graphserve-gpu
rm -rf "$work" && mkdir -p "$work" && tar -C /tmp -xzf "$bundle_tar"
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${cudnn_lib}:${LD_LIBRARY_PATH:-}"
bin="$work/bin"
log="$OUT/gpu_check.log"
: >"$log"
failures=0

run() {  # run NAME COMMAND...: logs, counts a failure on non-zero exit
  local name=$1
  shift
  echo "=== $name: $*" | tee -a "$log"
  if "$@" 2>&1 | tee -a "$log"; then
    echo "=== $name: ok" | tee -a "$log"
  else
    echo "=== $name: FAILED" | tee -a "$log"
    failures=$((failures + 1))
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee -a "$log"

for test in "$bin"/*_test; do
  run "$(basename "$test")" "$test" --gtest_brief=1
done
serve_bench() {  # one results file: the device tool brings back few files
  local dir="$OUT/serve"
  bash bench/serve_bench.sh "$bin" "$dir"
  local status=$?
  for file in "$dir"/*; do
    echo "===== $(basename "$file")"
    cat "$file"
  done >"$OUT/serve_results.txt"
  rm -rf "$dir"
  return $status
}
run serve_bench serve_bench
if [[ "$steps" == "serve" ]]; then
  echo "gpu_check: $failures step(s) failed" | tee -a "$log"
  exit $((failures > 0))
fi

run conformance_cuda "$bin/onnx_conformance" --executor=cuda --data "$work/testdata/node"
run conformance_host "$bin/onnx_conformance" --executor=host --data "$work/testdata/node"
run examples "$bin/run_example_models"
run launch_overhead "$bin/launch_overhead" --json "$OUT/launch_overhead.json"
run runtime_bench env PYTHONUNBUFFERED=1 python3 bench/run_runtime_bench.py --bin "$bin/runtime_bench" --out "$OUT"

# graphserve-capture prepare on the models the runtime benchmark exported:
# the MLP at 8 sizes x 4 streams (capture-time target), dlrm_dense with sizes
# chosen from a request history, the encoder at 4 sizes x 2 streams. The
# reports and configs land in $OUT/prepare_reports.txt.
repo="$work/repo"
run prepare_mlp "$bin/graphserve-capture" prepare --model "$OUT/models/mlp.onnx" \
  --out "$repo/mlp" --streams 4 --batch-sizes 1,2,4,8,16,32,64,128 --max-batch-size 256
run prepare_dlrm_dense "$bin/graphserve-capture" prepare --model "$OUT/models/dlrm_dense.onnx" \
  --out "$repo/dlrm_dense" --streams 2 --history bench/histories/recsys_requests.txt \
  --num-sizes 6 --max-batch-size 256
run prepare_encoder "$bin/graphserve-capture" prepare --model "$OUT/models/encoder.onnx" \
  --out "$repo/encoder" --streams 2 --batch-sizes 1,4,16,64
# One file (the device tool returns few files): each entry's report and config.
for dir in "$repo"/*/; do
  for file in capture_report.txt config.pbtxt; do
    echo "===== $(basename "$dir")/$file"
    cat "$dir/$file" 2>/dev/null || echo "(missing)"
  done
done >"$OUT/prepare_reports.txt"

echo "gpu_check: $failures step(s) failed" | tee -a "$log"
exit $((failures > 0))
