#!/usr/bin/env bash
# The served numbers on the GPU machine, read against the replay baseline and
# the RPC floor (issue 13's targets; bench/serve_summary.py writes the
# verdicts to summary.md):
#   1. replay_bench: bare replay and full-chunk latency per size, replay-only
#      throughput on M = 1, 2, 4 streams, graphs on and off (no gRPC);
#   2. served latency at concurrency 1: mlp and dlrm_dense, batch 1, 3, 16, 24
#      (captured sizes and sizes between them, so padding and splitting are
#      measured), three repeats each, every one with the floor (an empty
#      ServerLive RPC over the same connections) and the full-chunk replay;
#      then batch 1 and 16 with --run-on-rpc-thread=false (the hand-off path)
#      beside them; then 4 KiB vs 1 MiB requests through the message, system
#      and CUDA shared memory, and CUDA shared memory's outputs checked;
#   3. saturation: batch-1 requests, 64 concurrent over 16 connections, M = 4,
#      three repeats on each of four servers (graphs on/off x dynamic batching on/off), GPU
#      busy over the repeats' measured windows (perf --timeline) from the
#      driver's own NVML samples (bench/nvml_sampler.py), then half the
#      saturated request rate for p99 against p50; on two models: mlp,
#      where the gRPC transport, not the GPU, sets throughput, and the encoder
#      (4 TransformerEncoderLayers, x [B,16,256], exported with PyTorch by
#      bench/export_models.py), where kernel launches matter; with
#      SERVE_STREAMING, each saturated server over ModelStreamInfer streams too;
#   4. the serving core without gRPC (bench/core_bench.cc): the same models
#      loaded in-process and driven with 64 outstanding batch-1 requests, GPU
#      busy over the window core_bench measured, the same way: what the server
#      could do past its RPC path;
#   5. the RPC transport alone (bench/grpc_path_bench.cc): empty RPCs on gRPC's
#      callback API and on completion queues (the server's API for ModelInfer
#      and ServerLive, Note [Hot RPCs on completion queues]), side by side.
# Called by bench/gpu_check.sh with the unpacked bundle's bin folder, from
# the repository root.
#
#   bench/serve_bench.sh BIN_DIR OUT_DIR
#
# From the environment: SERVE_REPEATS (default 3) repeats of each measured
# run; SERVE_ENCODER=0 leaves the encoder out (default on; it needs PyTorch);
# SERVE_SETTINGS=1 adds the gRPC settings (the graphs-on batching mlp server
# under each of a few server flags, and the encoder's under each GPU wait,
# ~170 s), off by default so that the whole run stays within the device
# tool's 600 s for one command; SERVE_SETTINGS=only runs them alone.
# SERVE_STREAMING=1 adds, for every saturated server, the same load over
# ModelStreamInfer streams (perf --streaming: one stream per request in
# flight, so a request costs a message, not a call) and the latency at
# concurrency 1 over a stream (latency_<model>-stream_b<batch>_r<k>.csv);
# SERVE_STREAMING=only runs those and, for comparison, the same latency
# one call a request, and the saturated servers without streams (~5 minutes).
set -uo pipefail
# bin, out, work, failures and the server's helpers (bench/serve_server.sh).
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@" || exit 2
repeats=${SERVE_REPEATS:-3}
run_encoder=${SERVE_ENCODER:-1}
run_settings=${SERVE_SETTINGS:-0}
run_streaming=${SERVE_STREAMING:-0}

# SERVE_SETTINGS=only runs the settings table alone: a quick side-by-side of
# server flags; SERVE_STREAMING=only the saturated servers alone, each with
# and without streams.
one_part_only=0
[[ "$run_settings" == only ]] && one_part_only=1
[[ "$run_streaming" == only ]] && one_part_only=1

"$bin/make_example_models" --out "$work/models" >/dev/null

if [[ "$one_part_only" == 0 ]]; then
  echo "--- replay baseline (no gRPC)"
  for model in mlp dlrm_dense; do
    "$bin/replay_bench" --model "$work/models/$model.onnx" --batch-sizes 1,4,16,64,256 \
      --throughput-batch-sizes 1,16 --streams 1,2,4 --seconds 1 \
      --json "$out/replay_$model.json" || failures=$((failures + 1))
  done
fi

perf() {  # perf CSV [flags...]
  local csv=$1
  shift
  "$bin/graphserve-client" --url "localhost:$port" perf --warmup-secs 0.5 \
    --measurement-interval-ms 1000 --windows 1 --floor-windows 1 --connections 16 \
    --csv "$csv" "$@" || { failures=$((failures + 1)); return 1; }
}

# stop_recorder PID: stops an `nvml_sampler.py record` and counts its failure
# (no NVML, no driver samples, samples it cannot read).
stop_recorder() {
  kill -TERM "$1" 2>/dev/null
  wait "$1" || failures=$((failures + 1))
}

# Half the request rate a saturated run's CSV measured (0 when it has none).
half_rate() {
  python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(max(1, int(float(r[0]["Inferences/Second"]) / 2)) if r else 0)' \
    "$1" 2>/dev/null || echo 0
}


# latency_runs SUFFIX "BATCHES" [SERVER FLAGS...] [-- PERF FLAGS...]:
# concurrency 1, mlp and dlrm_dense at each batch of BATCHES, $repeats times,
# on the two-stream demo repository served with the server flags, measured
# with the perf flags; CSVs latency_<model><SUFFIX>_b<batch>_r<k>.
latency_runs() {
  local suffix=$1 batches=$2 server_flags=() perf_flags=()
  shift 2
  while (($# > 0)) && [[ "$1" != -- ]]; do
    server_flags+=("$1")
    shift
  done
  (($# > 0)) && shift && perf_flags=("$@")
  start_server "$work/repo_m2" ${server_flags[@]+"${server_flags[@]}"} || return
  local model batch r
  for model in mlp dlrm_dense; do
    for batch in $batches; do
      for r in $(seq 1 "$repeats"); do
        perf "$out/latency_${model}${suffix}_b${batch}_r${r}.csv" --model "$model" \
          --batch-size "$batch" --concurrency 1 ${perf_flags[@]+"${perf_flags[@]}"}
      done
    done
  done
  stop_server
}


# The saturated servers: each model in a plain repository and in a copy with
# dynamic batching, served with graphs on and off. A server's name leads with
# its model's (encoder_graphs_on_batching), except mlp's, which keep the names
# of earlier runs (graphs_on_batching). Its files, sat_cpu.txt and
# core_bench.txt lines and GPU-busy labels (core_<server> in-process) carry
# that name; serve_summary.py tells the models apart by what precedes one of
# the four fixed config names.
server_name() {  # server_name MODEL on|off batching|no_batching
  local config="graphs_$2_$3"
  if [[ "$1" == mlp ]]; then echo "$config"; else echo "$1_$config"; fi
}
server_repo() {  # server_repo batching|no_batching PLAIN_REPO BATCHING_REPO
  if [[ "$1" == batching ]]; then echo "$3"; else echo "$2"; fi
}

# saturated_repeats MODEL NAME KIND [PERF_FLAGS...]: the running server
# saturated with batch-1 requests, $repeats times (KIND_NAME_r<k>.csv, CPU in
# sat_cpu.txt), GPU busy over the repeats' measured windows (gpu_busy.txt,
# labelled NAME for KIND sat, KIND_NAME otherwise).
saturated_repeats() {
  local model=$1 name=$2 kind=$3
  shift 3
  local label=$name recorder r server_before start_ns client_cpu wall_ms server_cpu timelines
  [[ "$kind" == sat ]] || label="${kind}_$name"
  # GPU busy is taken over the repeats' measured windows only (each
  # timeline's first send to last answer), not perf's start, connections
  # and warm-up between them.
  python3 bench/nvml_sampler.py record --samples "$work/busy_${label}.csv" &
  recorder=$!
  timelines=()
  for r in $(seq 1 "$repeats"); do
    # Where the CPU goes at saturation: the server's and the load
    # generator's CPU seconds over the run's wall seconds (cores kept busy).
    server_before=$(cpu_seconds "$server_pid")
    start_ns=$(date +%s%N)
    # perf runs in a subshell only so that `times` counts it alone; its
    # failure is counted out here.
    timelines+=(--timeline "$work/tl_${label}_r${r}.csv")
    client_cpu=$( (perf "$out/${kind}_${name}_r${r}.csv" --model "$model" --batch-size 1 \
      --concurrency 64 --connections 16 --timeline "$work/tl_${label}_r${r}.csv" "$@" >&2 ||
      echo FAILED; times) | tail -n 3)
    if grep -q FAILED <<<"$client_cpu"; then failures=$((failures + 1)); fi
    client_cpu=$(tail -n 1 <<<"$client_cpu" | awk '{print $1" "$2}')
    wall_ms=$((($(date +%s%N) - start_ns) / 1000000))
    server_cpu=$(awk -v a="$(cpu_seconds "$server_pid")" -v b="$server_before" \
      'BEGIN {print a - b}')
    echo "$label r$r: wall ${wall_ms} ms, server CPU ${server_cpu} s, load generator CPU" \
      "(user sys) ${client_cpu}" | tee -a "$out/sat_cpu.txt"
  done
  stop_recorder "$recorder"
  python3 bench/nvml_sampler.py report --samples "$work/busy_${label}.csv" --label "$label" \
    "${timelines[@]}" --out "$out/gpu_busy.txt" || failures=$((failures + 1))
  rm -f "$work/tl_${label}_r"*.csv  # a line per request: large
}

# half_load MODEL NAME KIND OUT_KIND [PERF_FLAGS...]: the running server at
# half the saturated rate of KIND_NAME's last repeat, for p99 against p50:
# at a constant rate (perf_analyzer's default schedule) and with Poisson
# arrivals, whose bursts queue even at half load (OUT_KIND_NAME_<distribution>.csv).
half_load() {
  local model=$1 name=$2 kind=$3 out_kind=$4 rate distribution
  shift 4
  rate=$(half_rate "$out/${kind}_${name}_r${repeats}.csv")
  [[ "$rate" -gt 0 ]] || return 0
  for distribution in constant poisson; do
    perf "$out/${out_kind}_${name}_${distribution}.csv" --model "$model" --batch-size 1 \
      --connections 16 --request-rate "$rate" --request-distribution "$distribution" "$@"
  done
}

# saturation_runs MODEL PLAIN_REPO BATCHING_REPO: the four servers saturated
# with batch-1 requests (saturated_repeats: sat_<server>_r<k>.csv), with
# SERVE_STREAMING the same load over ModelStreamInfer streams beside it
# (stream_<server>_r<k>.csv) and at half its rate (halfstream_<server>_
# <distribution>.csv), then, unless SERVE_STREAMING=only, at half the
# saturated rate (half_<server>_<distribution>.csv).
saturation_runs() {
  local model=$1 plain=$2 batching_repo=$3
  local graphs batching name rate distribution
  for graphs in on off; do
    for batching in batching no_batching; do
      name=$(server_name "$model" "$graphs" "$batching")
      echo "--- $name"
      start_server "$(server_repo "$batching" "$plain" "$batching_repo")" --graphs "$graphs" ||
        continue
      saturated_repeats "$model" "$name" sat
      if [[ "$run_streaming" != 0 ]]; then
        saturated_repeats "$model" "$name" stream --streaming
        half_load "$model" "$name" stream halfstream --streaming
      fi
      if [[ "$run_streaming" == only ]]; then
        stop_server
        continue
      fi
      # Empty RPCs did best over 16 connections and worst over 64, whatever
      # the API (bench/results/2026-11-26_ffcd9bf_grpc_path_h200): the
      # saturated runs use 16, and this one the 64 of earlier runs, to
      # compare (mlp's alone: earlier runs had no other model).
      if [[ "$name" == graphs_on_batching ]]; then
        perf "$out/conn64_${name}.csv" --model "$model" --batch-size 1 --concurrency 64 \
          --connections 64
      fi
      half_load "$model" "$name" sat half
      stop_server
    done
  done
}

# core_runs MODEL PLAIN_REPO BATCHING_REPO: the same four servers' model
# in-process (core_bench), a line each in core_bench.txt led by the server's
# name, GPU busy over the window core_bench measured (the line it prints
# before its last), labelled core_<server>.
core_runs() {
  local model=$1 plain=$2 batching_repo=$3
  local graphs batching name recorder log window
  for graphs in on off; do
    for batching in batching no_batching; do
      name=$(server_name "$model" "$graphs" "$batching")
      log="$work/core_${name}.log"
      python3 bench/nvml_sampler.py record --samples "$work/busy_core_${name}.csv" &
      recorder=$!
      "$bin/core_bench" --model-repository "$(server_repo "$batching" "$plain" "$batching_repo")" \
        --model "$model" --graphs "$graphs" --outstanding 64 --threads 8 --milliseconds 2000 \
        >"$log" 2>&1 || failures=$((failures + 1))
      stop_recorder "$recorder"
      tail -n 1 "$log" | sed "s/^/$name: /" | tee -a "$out/core_bench.txt"
      window=$(sed -n 's/^measured window (steady clock us): \([0-9]*\) \([0-9]*\)$/\1,\2/p' "$log")
      [[ -n "$window" ]] || failures=$((failures + 1))  # core_bench printed none
      python3 bench/nvml_sampler.py report --samples "$work/busy_core_${name}.csv" \
        --label "core_$name" ${window:+--window "$window"} --out "$out/gpu_busy.txt" ||
        failures=$((failures + 1))
    done
  done
}

# prepare_encoder PLAIN_REPO BATCHING_REPO: the encoder exported from PyTorch
# and captured at the sizes a batching server merges into (4 streams, as the
# demo repositories), into PLAIN_REPO/encoder, then copied with dynamic
# batching on; prints the capture's eager and graph latency per size. Fails,
# having printed why, when the export or the capture does.
prepare_encoder() {
  local plain=$1 batching_repo=$2
  python3 bench/export_models.py --models encoder --out "$work/encoder_model" || return 1
  "$bin/graphserve-capture" prepare --model "$work/encoder_model/encoder.onnx" \
    --out "$plain/encoder" --streams 4 --batch-sizes 1,2,4,8,16 >"$work/prepare.log" 2>&1 || {
    cat "$work/prepare.log"
    return 1
  }
  sed -n '/^latency per launch/,/^$/p' "$plain/encoder/capture_report.txt"
  cp -r "$plain" "$batching_repo" && with_batching "$batching_repo"
}

# settings_runs: the graphs-on batching mlp server saturated (twice each), at
# half that rate and at concurrency 1 (mlp b1, dlrm_dense b16, M=2) under each
# of several server flags (variant_*.csv), then the encoder saturated under
# each way of waiting for the GPU when its repositories are ready.
settings_runs() {
  local variant label flags rate r
  echo "--- gRPC settings: the graphs-on batching server saturated (twice each) and at"
  echo "    concurrency 1 (mlp b1, dlrm_dense b16, M=2) with each"
  # spin50: idle stream workers and responders poll for 50 us, the default
  # before Note [Idle polling off by default]. mutexcheck: the default with
  # Abseil's deadlock detection kept on in the server and the load generator,
  # as before Note [Abseil's deadlock detection]. (2 and 8 queues measured no
  # better than 4: bench/results/2026-11-26_3804156_serve_grpc_settings_h200.)
  # yield: stream workers that give their core away while they wait for the
  # GPU (--gpu-wait; the default, auto, spins for mlp's short chunks); block:
  # workers that sleep until the GPU signals.
  # Each saturated server is also run at half its rate, at a constant rate.
  for variant in "q4x2" "mutexcheck" "spin50 --idle-spin-us 50" \
    "q4x1 --grpc-threads-per-queue 1" "handoff --run-on-rpc-thread=false" \
    "yield --gpu-wait yield" "block --gpu-wait block"; do
    label=${variant%% *}
    flags=()
    [[ "$variant" == *" "* ]] && read -r -a flags <<<"${variant#* }"
    if [[ "$label" == mutexcheck ]]; then
      export GRAPHSERVE_MUTEX_DEADLOCK_DETECTION=1
    else
      unset GRAPHSERVE_MUTEX_DEADLOCK_DETECTION
    fi
    if start_server "$work/repo_batching" --graphs on "${flags[@]}"; then
      for r in 1 2; do
        perf "$out/variant_sat_${label}_r${r}.csv" --model mlp --batch-size 1 --concurrency 64 \
          --connections 16
      done
      rate=$(half_rate "$out/variant_sat_${label}_r2.csv")
      if [[ "$rate" -gt 0 ]]; then
        perf "$out/variant_half_${label}.csv" --model mlp --batch-size 1 --connections 16 \
          --request-rate "$rate" --request-distribution constant
      fi
      stop_server
    fi
    if start_server "$work/repo_m2" "${flags[@]}"; then
      perf "$out/variant_c1_${label}_mlp_b1.csv" --model mlp --batch-size 1 --concurrency 1
      perf "$out/variant_c1_${label}_dlrm_dense_b16.csv" --model dlrm_dense --batch-size 16 \
        --concurrency 1
      stop_server
    fi
  done
  unset GRAPHSERVE_MUTEX_DEADLOCK_DETECTION
  [[ "$encoder_ready" == 1 ]] || return 0
  # The encoder's workers wait 0.2-0.7 ms for each chunk: spinning there
  # holds a core per slot that gRPC's threads could use, so auto sleeps for
  # it (Note [How threads wait for the GPU]); spin shows what that buys.
  echo "--- the encoder's graphs-on batching server saturated (twice each) with each GPU wait"
  for label in auto spin yield block; do
    start_server "$work/encoder_batching" --graphs on --gpu-wait "$label" || continue
    for r in 1 2; do
      perf "$out/variant_sat_encoder-${label}_r${r}.csv" --model encoder --batch-size 1 \
        --concurrency 64 --connections 16
    done
    rate=$(half_rate "$out/variant_sat_encoder-${label}_r2.csv")
    if [[ "$rate" -gt 0 ]]; then
      perf "$out/variant_half_encoder-${label}.csv" --model encoder --batch-size 1 \
        --connections 16 --request-rate "$rate" --request-distribution constant
    fi
    stop_server
  done
}

"$bin/make_demo_repository" --out "$work/repo_m2" --streams 2 >/dev/null
"$bin/make_demo_repository" --out "$work/repo_plain" --streams 4 >/dev/null
"$bin/make_demo_repository" --out "$work/repo_batching" --streams 4 >/dev/null
with_batching "$work/repo_batching"
encoder_ready=0
if [[ "$run_encoder" != 0 ]]; then
  echo "--- the encoder (4 TransformerEncoderLayers, x [B,16,256]), exported and captured"
  if prepare_encoder "$work/encoder_plain" "$work/encoder_batching"; then
    encoder_ready=1
  else
    echo "serve_bench: the encoder's export or capture failed; its workload is skipped"
    failures=$((failures + 1))
  fi
fi

if [[ "$run_settings" == only ]]; then
  settings_runs
fi
if [[ "$run_streaming" == only ]]; then
  echo "--- served latency at concurrency 1 (2 streams, graphs on), one call a request and"
  echo "    over a ModelStreamInfer stream"
  latency_runs "" "1 3 16"
  latency_runs -stream "1 3 16" -- --streaming
  saturation_runs mlp "$work/repo_plain" "$work/repo_batching"
  if [[ "$encoder_ready" == 1 ]]; then
    saturation_runs encoder "$work/encoder_plain" "$work/encoder_batching"
  fi
fi
if [[ "$one_part_only" == 1 ]]; then
  python3 bench/serve_summary.py "$out" || failures=$((failures + 1))
  rm -rf "$work"
  echo "serve_bench: $failures failures"
  exit $((failures > 0))
fi

echo "--- served latency at concurrency 1 (2 streams, graphs on)"
latency_runs "" "1 3 16 24"
echo "--- the same with --run-on-rpc-thread=false (the hand-off to a stream worker and a"
echo "    responder that the default skips on an idle slot)"
latency_runs -handoff "1 16" --run-on-rpc-thread=false
echo "--- the same with --idle-spin-us 1000: idle workers and responders poll, keeping cores"
echo "    awake; what is left of the overhead without thread wake-ups"
latency_runs -spin1000 "1 16" --idle-spin-us 1000
echo "--- the hand-off path with --idle-spin-us 1000 (hot workers and responders)"
latency_runs -handoff-spin1000 "1 16" --run-on-rpc-thread=false --idle-spin-us 1000
if [[ "$run_streaming" != 0 ]]; then
  echo "--- the default server's requests over a ModelStreamInfer stream"
  latency_runs -stream "1 3 16" -- --streaming
fi

echo "--- shared memory: mlp, 4 KiB (batch 2) and 1 MiB (batch 512) requests, concurrency 1"
"$bin/make_demo_repository" --out "$work/repo_shm" --streams 2 --max-batch-size 512 \
  --batch-sizes 1,2,4,16,64,256,512 >/dev/null
if start_server "$work/repo_shm"; then
  for mode in none system cuda; do
    for batch in 2 512; do
      for r in $(seq 1 "$repeats"); do
        perf "$out/shm_${mode}_b${batch}_r${r}.csv" --model mlp --batch-size "$batch" \
          --concurrency 1 --shared-memory "$mode"
      done
    done
  done
  # infer through CUDA shared memory returns what infer through the message
  # does (the outputs' bytes, compared exactly).
  for mode in none cuda; do
    "$bin/graphserve-client" --url "localhost:$port" infer --model mlp --batch-size 24 \
      --seed 7 --shared-memory "$mode" --output-dir "$work/infer_$mode" >/dev/null ||
      failures=$((failures + 1))
  done
  if cmp "$work/infer_none/y.bin" "$work/infer_cuda/y.bin"; then
    echo "cuda shared memory: infer outputs equal the message path's (batch 24)" |
      tee "$out/shm_cuda_equal.txt"
  else
    echo "serve_bench: cuda shared memory outputs differ from the message path's"
    failures=$((failures + 1))
  fi
  stop_server
fi

echo "--- saturation: mlp, batch 1, 64 concurrent, M=4"
saturation_runs mlp "$work/repo_plain" "$work/repo_batching"
if [[ "$encoder_ready" == 1 ]]; then
  echo "--- saturation: encoder, batch 1, 64 concurrent, M=4"
  saturation_runs encoder "$work/encoder_plain" "$work/encoder_batching"
fi

if [[ "$run_settings" == 1 ]]; then
  settings_runs
fi

echo "--- the serving core without gRPC: the same servers' models in-process (core_bench),"
echo "    batch-1 requests, 64 outstanding, M=4"
core_runs mlp "$work/repo_plain" "$work/repo_batching"
if [[ "$encoder_ready" == 1 ]]; then
  core_runs encoder "$work/encoder_plain" "$work/encoder_batching"
fi

echo "--- the RPC transport alone: empty RPCs, callback API vs completion queues"
for server_api in callback queues; do
  "$bin/grpc_path_bench" serve --api "$server_api" --threads 4 --address "127.0.0.1:$port" &
  transport_pid=$!
  sleep 1
  for load in "queues --threads 4 --channels 16 --concurrency 64" \
    "queues --threads 1 --channels 1 --concurrency 1" \
    "callback --channels 1 --concurrency 1"; do
    # shellcheck disable=SC2086 # the load's flags, split on purpose
    "$bin/grpc_path_bench" load --api $load --address "127.0.0.1:$port" |
      sed "s/^/server=$server_api /" | tee -a "$out/grpc_path.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || failures=$((failures + 1))
  done
  kill "$transport_pid" 2>/dev/null
  wait "$transport_pid" 2>/dev/null
done

python3 bench/serve_summary.py "$out" || failures=$((failures + 1))
rm -rf "$work"
echo "serve_bench: $failures failures"
exit $((failures > 0))
