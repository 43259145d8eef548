#!/usr/bin/env bash
# Why p99 at half the saturated request rate is often 10-300x p50 (issue 13's
# target: p99 <= 2x p50): a few stalls that hold every request sent during
# them, or a queue that never drains, and whether the threads were busy,
# idle or waiting for a core meanwhile.
#
# mlp, batch-1 requests over 16 connections, M=4, through the message, on
# three servers: graphs on without batching, graphs off without batching
# (the two that collapsed in earlier runs) and graphs on with dynamic
# batching; and the first again with --run-on-rpc-thread=false. Each is
# saturated (64 concurrent) for its rate, and run with 1024 in flight (the
# load generator's cap) to compare, then at half the 64-concurrent rate,
# constant spacing, for 3 s with perf's --timeline while
# bench/thread_sampler.py samples the server's and the load generator's
# threads at 100 Hz. bench/timeline_report.py then reads each timeline with
# its series. Called by bench/gpu_check.sh with the unpacked bundle's bin
# folder; about 2 minutes.
#
#   bench/tail_probe.sh BIN_DIR OUT_DIR
set -uo pipefail
# bin, out, work, failures and the server's helpers (bench/serve_server.sh).
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@" || exit 2

"$bin/make_demo_repository" --out "$work/repo_plain" --streams 4 >/dev/null
"$bin/make_demo_repository" --out "$work/repo_batching" --streams 4 >/dev/null
with_batching "$work/repo_batching"
report="$out/tail_probe.txt"
: >"$report"
echo "cores: $(nproc); kernel: $(uname -r)" | tee -a "$report"

perf() {  # perf CSV [flags...]: its summary lines into the report; a failure is counted
  local csv=$1
  shift
  "$bin/graphserve-client" --url "localhost:$port" perf --model mlp --batch-size 1 \
    --connections 16 --warmup-secs 0.5 --windows 1 --floor-windows 0 --csv "$csv" "$@" \
    >"$work/perf.log" 2>&1 || failures=$((failures + 1))
  grep -E "throughput|behind|delayed|error" "$work/perf.log" | tee -a "$report"
}

# probe LABEL REPO [SERVER FLAGS...]
probe() {
  local label=$1 repo=$2
  shift 2
  echo "--- $label" | tee -a "$report"
  start_server "$repo" --graphs "$@" >"$work/start.log" || { cat "$work/start.log"; return; }
  perf "$work/sat_$label.csv" --concurrency 64 --measurement-interval-ms 1000
  # The same closed loop at the load generator's cap on requests in flight:
  # a server slower there cannot drain a backlog that reached the cap
  # (Note [A deep queue stays cheap] in server/request_queue.h).
  perf "$work/sat1024_$label.csv" --concurrency 1024 --measurement-interval-ms 1000
  local rate
  rate=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(int(float(r[0]["Inferences/Second"]) / 2))' \
    "$work/sat_$label.csv" 2>/dev/null || echo 0)
  if [[ "$rate" -gt 0 ]]; then
    "$bin/graphserve-client" --url "localhost:$port" perf --model mlp --batch-size 1 \
      --connections 16 --warmup-secs 0.5 --windows 1 --floor-windows 0 \
      --measurement-interval-ms 3000 --request-rate "$rate" --csv "$work/half_$label.csv" \
      --timeline "$work/timeline_$label.csv" >"$work/perf_$label.log" 2>&1 &
    local perf_pid=$!
    sleep 0.2
    python3 bench/thread_sampler.py --pid "server=$server_pid" --pid "perf=$perf_pid" --hz 100 \
      --series "$work/series_$label.csv" >"$work/threads_$label.txt" &
    local sampler=$!
    wait "$perf_pid" || failures=$((failures + 1))
    kill -TERM "$sampler" 2>/dev/null
    wait "$sampler"
    grep -E "throughput|behind|delayed" "$work/perf_$label.log" | tee -a "$report"
    tee -a "$report" <"$work/threads_$label.txt"
    python3 bench/timeline_report.py "$work/timeline_$label.csv" \
      --series "$work/series_$label.csv" | tee -a "$report" || failures=$((failures + 1))
  else
    echo "tail_probe: no saturated rate for $label" | tee -a "$report"
    failures=$((failures + 1))
  fi
  stop_server
}

# The graphs flag comes first among the server flags: "on" or "off".
probe graphs_on_no_batching "$work/repo_plain" on
probe graphs_off_no_batching "$work/repo_plain" off
probe graphs_on_batching "$work/repo_batching" on
probe graphs_on_no_batching_handoff "$work/repo_plain" on --run-on-rpc-thread=false

(cd "$work" && tar -czf "$out/tail_timelines.tar.gz" timeline_*.csv series_*.csv)
echo "tail_probe: $failures failures"
exit $((failures > 0))
