#!/usr/bin/env bash
# The served numbers on the GPU machine, read against the replay baseline:
#   1. replay_bench: bare replay and full-chunk latency per size, replay-only
#      throughput on M = 1, 2, 4 streams, graphs on and off (no gRPC);
#   2. served latency at concurrency 1: mlp and dlrm_dense, batch 1, 16, 256,
#      through graphserve and graphserve-client perf over loopback;
#   3. a served throughput sweep, mlp batch 1, concurrency 1..64, M = 1, 2, 4,
#      graphs on and off, with GPU utilisation sampled by nvidia-smi during a
#      saturated run of each server.
# Called by bench/gpu_check.sh with the unpacked bundle's bin folder.
#
#   bench/serve_bench.sh BIN_DIR OUT_DIR
set -uo pipefail
bin=$1
out=$2
work=$(mktemp -d)
mkdir -p "$out"
failures=0

"$bin/make_example_models" --out "$work/models" >/dev/null

echo "--- replay baseline (no gRPC)"
for model in mlp dlrm_dense; do
  "$bin/replay_bench" --model "$work/models/$model.onnx" --batch-sizes 1,4,16,64,256 \
    --throughput-batch-sizes 1 --streams 1,2,4 --seconds 2 \
    --json "$out/replay_$model.json" || failures=$((failures + 1))
done

port=8001
server_pid=""
start_server() {  # start_server REPO [extra flags...]
  local repo=$1
  shift
  "$bin/graphserve" --model-repository "$repo" --grpc-port "$port" --device cuda "$@" \
    >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    if grep -q "serving gRPC on" "$work/server.log"; then
      cat "$work/server.log"
      return 0
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "serve_bench: the server did not start:"
  cat "$work/server.log"
  failures=$((failures + 1))
  return 1
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null
  if ! wait "$server_pid"; then
    echo "serve_bench: the server did not exit 0 on SIGTERM"
    failures=$((failures + 1))
  fi
  tail -n 3 "$work/server.log"
}
perf() {  # perf CSV [flags...]
  local csv=$1
  shift
  "$bin/graphserve-client" --url "localhost:$port" perf --warmup-secs 1 \
    --measurement-interval-ms 1000 --windows 3 --connections 16 --csv "$csv" "$@" || failures=$((failures + 1))
}

echo "--- served latency at concurrency 1 (2 streams, graphs on)"
"$bin/make_demo_repository" --out "$work/repo_m2" --streams 2 >/dev/null
if start_server "$work/repo_m2"; then
  for model in mlp dlrm_dense; do
    for batch in 1 16 256; do
      perf "$out/latency_${model}_b${batch}.csv" --model "$model" --batch-size "$batch" \
        --concurrency 1
    done
  done
  stop_server
fi

echo "--- served throughput sweep: mlp, batch 1, concurrency 1..64"
for streams in 1 2 4; do
  "$bin/make_demo_repository" --out "$work/repo_m$streams" --streams "$streams" >/dev/null
  for graphs in on off; do
    echo "--- M=$streams graphs $graphs"
    start_server "$work/repo_m$streams" --graphs "$graphs" || continue
    perf "$out/sweep_m${streams}_graphs_${graphs}.csv" --model mlp --batch-size 1 \
      --concurrency 1,2,4,8,16,32,64
    # GPU utilisation while saturated: nvidia-smi samples every 100 ms.
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 \
      >"$work/util.txt" 2>/dev/null &
    smi_pid=$!
    perf "$work/saturated.csv" --model mlp --batch-size 1 --concurrency 64
    kill "$smi_pid" 2>/dev/null
    wait "$smi_pid" 2>/dev/null
    awk -v m="$streams" -v g="$graphs" \
      '{ s += $1; n += 1 } END { if (n) printf "gpu_util M=%s graphs=%s: mean %.1f%% over %d samples\n", m, g, s / n, n }' \
      "$work/util.txt" | tee -a "$out/gpu_util.txt"
    stop_server
  done
done

rm -rf "$work"
echo "serve_bench: $failures failures"
exit $((failures > 0))
