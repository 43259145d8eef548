#!/usr/bin/env bash
# Several GPUs in one server, on a machine with two (the device tool's
# two-GPU kinds); a one-GPU machine could only imitate them by listing GPU 0
# twice (bench/results/2026-11-23_ade77c3_deploy_h100).
#   1. Outputs: the demo models (mlp; dlrm_dense, two inputs) on GPU 1 alone
#      (--device cuda:1) and on GPUs 0 and 1 (--device auto), at captured,
#      padded and split sizes, through the message, system shared memory and
#      CUDA shared memory on each GPU (a region on the model's only GPU is
#      read and written by the device; any other through the host), each
#      against the host executor's outputs for the same request.
#   2. Merged requests over both GPUs: mlp with dynamic batching, 64
#      concurrent: each GPU's memory and busy time (NVML's driver samples over
#      the measured window), Triton's GPU gauges on the metrics port for
#      each GPU, fewer executions than inferences, no failures.
#   3. Scaling: the encoder (bench/export_models.py; M=4 a GPU) on GPU 0 alone
#      against GPUs 0 and 1: without batching at 1, 2 and 4 requests in flight
#      (p50: one GPU's streams shared, or a GPU each); with dynamic batching
#      saturated, served (64 and 128 concurrent over 16 connections, 3 repeats
#      of 64) and in-process (core_bench), each GPU's busy time beside it.
# Called by bench/gpu_check.sh (mode multi-gpu) with the unpacked bundle's bin
# folder; about 3 minutes.
#
#   bench/multi_gpu_probe.sh BIN_DIR OUT_DIR
set -uo pipefail
# bin, out, work, failures and the server's helpers (bench/serve_server.sh).
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@" || exit 2
results="$out/multi_gpu_results.txt"
: >"$results"
note() { echo "$*" | tee -a "$results"; }
fail() {
  note "multi_gpu_probe: $*"
  failures=$((failures + 1))
}

gpus=$(nvidia-smi --list-gpus | grep -c '^GPU')
note "GPUs: $gpus; cores: $(nproc)"
if ((gpus < 2)); then
  fail "needs two GPUs, this machine has $gpus"
  exit 1
fi

"$bin/make_demo_repository" --out "$work/repo" --streams 2 --max-batch-size 512 \
  --batch-sizes 1,2,4,16,64,256,512 >/dev/null

sizes="1 5 24 100 512"  # captured, padded, split into 64 + 16 + 4 x 2..., past 256
# infer_all DIR SHM [CUDA DEVICE]: one request per model and size, seed 7,
# outputs under DIR/<model>_b<size>/.
infer_all() {
  local dir=$1 shm=$2 model batch
  local region_gpu=(${3:+--cuda-device "$3"})
  for model in mlp dlrm_dense; do
    for batch in $sizes; do
      "$bin/graphserve-client" --url "localhost:$port" infer --model "$model" \
        --batch-size "$batch" --seed 7 --shared-memory "$shm" ${region_gpu[@]+"${region_gpu[@]}"} \
        --output-dir "$dir/${model}_b${batch}" >/dev/null ||
        fail "infer failed: $model b$batch through $shm ${3:+on GPU $3}"
    done
  done
}

# against_host LABEL DIR: every output in DIR against the host executor's
# (max |a - b| <= 1e-5 x max(1, max |b|)).
against_host() {
  if python3 - "$work/host" "$2" <<'PY'; then note "$1: every output matches the host executor's"; else fail "$1: outputs differ from the host executor's"; fi
import pathlib, sys
import numpy as np
reference, tested = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
bad = 0
files = sorted(reference.glob("*/*.bin"))
for want_path in files:
    got_path = tested / want_path.parent.name / want_path.name
    want = np.fromfile(want_path, dtype=np.float32)
    got = np.fromfile(got_path, dtype=np.float32) if got_path.exists() else np.zeros(0, np.float32)
    err = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
    if not err <= 1e-5 * max(1.0, float(np.max(np.abs(want)))):
        print(f"  {want_path.parent.name}/{want_path.name}: max abs error {err}")
        bad += 1
print(f"  {len(files) - bad} of {len(files)} outputs within tolerance")
sys.exit(1 if bad or not files else 0)
PY
}

echo "--- 1. outputs against the host executor"
start_server "$work/repo" --device cpu >/dev/null && {
  infer_all "$work/host" none
  stop_server >/dev/null
}

# serve_and_check LABEL DEVICE_FLAG EXPECTED_EXECUTOR
serve_and_check() {
  local label=$1 device=$2 executor=$3 shm path
  start_server "$work/repo" --device "$device" >"$work/start.log" || {
    cat "$work/start.log"
    return
  }
  if grep -q "$executor" "$work/server.log"; then
    note "$label: the startup table says $executor"
  else
    fail "$label: the startup table does not say $executor"
    cat "$work/server.log"
  fi
  for shm in none system "cuda 0" "cuda 1"; do
    # shellcheck disable=SC2086 # "cuda N": the path, then the region's GPU
    infer_all "$work/${label}_${shm// /}" $shm
    case "$shm" in
      none) path="the message" ;;
      system) path="system shared memory" ;;
      *) path="CUDA shared memory on GPU ${shm#cuda }" ;;
    esac
    against_host "$label, inputs and outputs through $path" "$work/${label}_${shm// /}"
  done
  stop_server >/dev/null
}
serve_and_check gpu1 cuda:1 "CUDA graphs, GPU 1"
serve_and_check gpus01 auto "CUDA graphs, GPUs 0,1"

# record_busy NAME: NVML recorders on every GPU (busy_<NAME>_gpu<i>.csv).
recorders=()
record_busy() {
  local i
  recorders=()
  for ((i = 0; i < gpus; i++)); do
    python3 bench/nvml_sampler.py record --device "$i" --samples "$work/busy_$1_gpu$i.csv" &
    recorders+=($!)
  done
}
# report_busy NAME TIMELINE_FLAGS...: each GPU's busy over the windows.
report_busy() {
  local name=$1 i
  shift
  for pid in "${recorders[@]}"; do
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" || fail "an NVML recorder failed ($name)"
  done
  for ((i = 0; i < gpus; i++)); do
    python3 bench/nvml_sampler.py report --samples "$work/busy_${name}_gpu$i.csv" \
      --label "${name} GPU $i" "$@" --out "$work/busy.txt" || fail "no GPU busy for $name GPU $i"
  done
  grep "^gpu_busy ${name} GPU" "$work/busy.txt" | tee -a "$results"
}

# perf_run CSV MODEL CONCURRENCY [flags...]: saturated batch-1 requests.
perf_run() {
  local csv=$1 model=$2 concurrency=$3
  shift 3
  "$bin/graphserve-client" --url "localhost:$port" perf --model "$model" --batch-size 1 \
    --concurrency "$concurrency" --connections 16 --warmup-secs 0.5 \
    --measurement-interval-ms 1000 --windows 1 --floor-windows 0 --csv "$csv" "$@" \
    >"$work/perf.log" 2>&1 || fail "perf failed: $csv"
  echo "$(basename "$csv" .csv): $(grep -m1 throughput "$work/perf.log")" | tee -a "$results"
}

echo "--- 2. merged requests over both GPUs"
cp -r "$work/repo" "$work/repo_batching" && with_batching "$work/repo_batching"
if start_server "$work/repo_batching" --device auto >/dev/null; then
  record_busy merged_mlp
  perf_run "$work/merged_mlp.csv" mlp 64 --timeline "$work/tl_merged.csv"
  nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader |
    grep "^$server_pid," | sed 's/^/server process on a GPU: /' | tee -a "$results"
  report_busy merged_mlp --timeline "$work/tl_merged.csv"
  # Triton's per-GPU gauges on the metrics port name every GPU.
  python3 - "$gpus" <<'PY' | tee -a "$results" || fail "the metrics do not name every GPU"
import re, sys, urllib.request
text = urllib.request.urlopen("http://localhost:8002/metrics", timeout=10).read().decode()
gauges = re.findall(r'^nv_gpu_utilization\{gpu_uuid="([^"]+)"\} (\S+)$', text, re.M)
print("metrics: " + ", ".join(f"nv_gpu_utilization {uuid} {value}" for uuid, value in gauges))
sys.exit(0 if len(gauges) == int(sys.argv[1]) else 1)
PY
  on_gpus=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -c "^$server_pid$")
  ((on_gpus == gpus)) || fail "the server holds memory on $on_gpus of $gpus GPUs"
  "$bin/graphserve-client" --url "localhost:$port" stats --model mlp | tee "$work/stats.txt" |
    tee -a "$results"
  # Columns: model, version, inferences, executions, success, fail.
  awk '$1 == "mlp" { ok = $4 < $3 && $6 == 0 } END { exit !ok }' "$work/stats.txt" ||
    fail "no merged executions, or failed requests, in the stats above"
  stop_server >/dev/null
fi

echo "--- 3. the encoder on one GPU and on two"
if python3 bench/export_models.py --models encoder --out "$work/encoder_model" >"$work/export.log" 2>&1 &&
  "$bin/graphserve-capture" prepare --model "$work/encoder_model/encoder.onnx" \
    --out "$work/enc/encoder" --streams 4 --batch-sizes 1,2,4,8,16 >"$work/prepare.log" 2>&1; then
  cp -r "$work/enc" "$work/enc_plain"
  with_batching "$work/enc"
  # A few requests in flight, no batching: each on a GPU of its own with two
  # (Note [Runner slots alternate GPUs]), sharing GPU 0's streams with one.
  for setting in "one cuda:0" "two auto"; do
    read -r label device <<<"$setting"
    start_server "$work/enc_plain" --device "$device" >/dev/null || continue
    "$bin/graphserve-client" --url "localhost:$port" perf --model encoder --batch-size 1 \
      --concurrency 1,2,4 --connections 4 --warmup-secs 0.5 --measurement-interval-ms 1000 \
      --windows 1 --floor-windows 0 --csv "$work/few_${label}.csv" >/dev/null ||
      fail "perf failed: few in flight on $label GPU(s)"
    stop_server >/dev/null
    python3 - "$work/few_${label}.csv" "$label" <<'PY' | tee -a "$results"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"encoder, no batching, on {sys.argv[2]} GPU(s): " + "; ".join(
    f"{r['Concurrency']} in flight p50 {r['p50 latency']} us, {float(r['Inferences/Second']):.0f}/s"
    for r in rows))
PY
  done
  # In-process, the GPUs come from the config (core_bench has no --device).
  cp -r "$work/enc" "$work/enc_two"
  echo "instance_group { kind: KIND_GPU gpus: [0, 1] }" >>"$work/enc_two/encoder/config.pbtxt"
  for setting in "one cuda:0" "two auto"; do
    read -r label device <<<"$setting"
    start_server "$work/enc" --device "$device" >/dev/null || continue
    grep -m1 "^encoder " "$work/server.log" | tee -a "$results"
    record_busy "served_${label}_gpu"
    timelines=()
    for r in 1 2 3; do
      perf_run "$work/served_${label}_c64_r$r.csv" encoder 64 --timeline "$work/tl_${label}_$r.csv"
      timelines+=(--timeline "$work/tl_${label}_$r.csv")
    done
    report_busy "served_${label}_gpu" "${timelines[@]}"
    perf_run "$work/served_${label}_c128.csv" encoder 128
    stop_server >/dev/null
    repo=$work/enc
    [[ "$label" == two ]] && repo=$work/enc_two
    for outstanding in 64 128; do
      record_busy "core_${label}_gpu_${outstanding}"
      "$bin/core_bench" --model-repository "$repo" --model encoder --graphs on \
        --outstanding "$outstanding" --threads 8 --milliseconds 2000 >"$work/core.log" 2>&1 ||
        fail "core_bench failed ($label GPU, $outstanding outstanding)"
      tail -n 1 "$work/core.log" | sed "s/^/core, $label GPU(s), $outstanding outstanding: /" |
        tee -a "$results"
      window=$(sed -n 's/^measured window (steady clock us): \([0-9]*\) \([0-9]*\)$/\1,\2/p' \
        "$work/core.log")
      [[ -n "$window" ]] || fail "core_bench printed no measured window"
      report_busy "core_${label}_gpu_${outstanding}" ${window:+--window "$window"}
    done
  done
  python3 - "$work" <<'PY' | tee -a "$results"
import csv, pathlib, statistics, sys
work = pathlib.Path(sys.argv[1])
def rate(name):
    rows = list(csv.DictReader(open(work / name))) if (work / name).exists() else []
    return float(rows[0]["Inferences/Second"]) if rows else float("nan")
for label in ("one", "two"):
    runs = [rate(f"served_{label}_c64_r{r}.csv") for r in (1, 2, 3)]
    print(f"served encoder on {label} GPU(s), 64 concurrent: median {statistics.median(runs):.0f} "
          f"infer/s [{min(runs):.0f}-{max(runs):.0f}]; 128 concurrent: "
          f"{rate(f'served_{label}_c128.csv'):.0f}")
one = statistics.median(rate(f"served_one_c64_r{r}.csv") for r in (1, 2, 3))
two = statistics.median(rate(f"served_two_c64_r{r}.csv") for r in (1, 2, 3))
print(f"served, 64 concurrent: two GPUs / one = {two / one:.2f}x")
PY
  for file in "$work"/served_*.csv; do
    echo "===== $(basename "$file")"
    cat "$file"
  done >>"$results"
else
  cat "$work/export.log" "$work/prepare.log" 2>/dev/null | tail -n 20
  fail "the encoder's export or capture failed"
fi

rm -rf "$work"
note "multi_gpu_probe: $failures failures"
exit $((failures > 0))
