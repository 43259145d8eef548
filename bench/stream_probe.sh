#!/usr/bin/env bash
# Where the saturated mlp's ceiling is once requests ride ModelStreamInfer
# streams: the load generator, the number of requests or connections, or
# the server's threads. On the graphs-on, dynamic-batching mlp server (M=4),
# batch-1 requests, each run one 1 s window after 0.5 s of warm-up:
#   - one load generator, 64 in flight over 16 connections, one call a
#     request and over streams (twice each);
#   - two load generators at once, 32 in flight over 8 connections each (the
#     same 64 in all): if their sum beats one generator's, one generator was
#     the bound;
#   - streams over 1 to 64 connections, and with 128 in flight;
#   - streams against servers with other threading flags, and with a queue
#     delay that lets a free slot wait for a fuller chunk;
#   - concurrency 1, batch 1 and 16, one call a request against streams,
#     each with its floor and served overhead.
# The server's CPU seconds and its rows per execution over each run go beside
# it. Called by
# bench/gpu_check.sh (`stream`) with the unpacked bundle's bin folder:
#
#   bench/stream_probe.sh BIN_DIR OUT_DIR      # OUT_DIR/stream_probe.txt
set -uo pipefail
# bin, out, work, failures and the server's helpers (bench/serve_server.sh).
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@" || exit 2
results="$out/stream_probe.txt"

"$bin/make_demo_repository" --out "$work/repo" --streams 4 >/dev/null
with_batching "$work/repo"

perf() {  # perf CSV [flags...]
  "$bin/graphserve-client" --url "localhost:$port" perf --model mlp --batch-size 1 \
    --warmup-secs 0.5 --measurement-interval-ms 1000 --windows 1 --floor-windows 0 \
    --csv "$1" "${@:2}" >/dev/null || { echo "perf failed: $*"; return 1; }
}

# One line of results: LABEL, the summed throughput and the worst p50 of
# the CSVs, the server's CPU cores and rows per execution over the run
# (warm-up included).
report() {  # report LABEL SERVER_CPU_SECONDS WALL_MS ROWS_PER_EXECUTION CSV...
  python3 - "$@" <<'PY' | tee -a "$results"
import csv, sys
label, cpu, wall_ms, rows_per_execution = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), \
    float(sys.argv[4])
rows = [next(csv.DictReader(open(p))) for p in sys.argv[5:]]
thr = sum(float(r["Inferences/Second"]) for r in rows)
p50 = max(int(r["p50 latency"]) for r in rows)
print(f"{label}: {thr:.0f} infer/s, p50 {p50} us (worst of {len(rows)}), "
      f"server {cpu / (wall_ms / 1000):.1f} cores, {rows_per_execution:.1f} rows per execution")
PY
}

# mlp's inferences and executions so far (graphserve-client stats).
counts() {
  "$bin/graphserve-client" --url "localhost:$port" stats --model mlp | awk '$1 == "mlp" {print $3, $4}'
}

# measure LABEL LOADS: runs the load generators given, one per argument
# (each a string of perf flags), at once.
measure() {
  local label=$1 before start_ns i csvs=() pids=() load counts_before counts_after
  shift
  counts_before=$(counts)
  before=$(cpu_seconds "$server_pid")
  start_ns=$(date +%s%N)
  i=0
  for load in "$@"; do
    csvs+=("$work/${label// /_}_$i.csv")
    # shellcheck disable=SC2086 # the load's flags, split on purpose
    perf "${csvs[-1]}" $load &
    pids+=($!)
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do wait "$pid" || failures=$((failures + 1)); done
  counts_after=$(counts)
  report "$label" "$(awk -v a="$(cpu_seconds "$server_pid")" -v b="$before" \
    'BEGIN {print a - b}')" $((($(date +%s%N) - start_ns) / 1000000)) \
    "$(awk -v a="$counts_after" -v b="$counts_before" 'BEGIN {split(a, x, " ");
      split(b, y, " "); print (x[2] > y[2]) ? (x[1] - y[1]) / (x[2] - y[2]) : 0}')" \
    "${csvs[@]}" || failures=$((failures + 1))
}

echo "# mlp, graphs on, dynamic batching, M=4, batch-1 requests" | tee "$results"
if start_server "$work/repo"; then
  for r in 1 2; do
    measure "one call a request, c64 over 16 connections, r$r" \
      "--concurrency 64 --connections 16"
    measure "streams, c64 over 16 connections, r$r" "--concurrency 64 --connections 16 --streaming"
  done
  for r in 1 2; do
    measure "two generators, one call a request, c32 over 8 connections each, r$r" \
      "--concurrency 32 --connections 8" "--concurrency 32 --connections 8"
    measure "two generators, streams, c32 over 8 connections each, r$r" \
      "--concurrency 32 --connections 8 --streaming" "--concurrency 32 --connections 8 --streaming"
  done
  for connections in 1 4 8 64; do
    measure "streams, c64 over $connections connections" \
      "--concurrency 64 --connections $connections --streaming"
  done
  measure "one call a request, c64 over 4 connections" "--concurrency 64 --connections 4"
  measure "streams, c128 over 16 connections" "--concurrency 128 --connections 16 --streaming"
  stop_server
fi
for flags in "--run-on-rpc-thread=false" "--gpu-wait block" "--grpc-threads-per-queue 1" \
  "--responder-threads 8" "--grpc-queues 8"; do
  # shellcheck disable=SC2086 # the server's flags, split on purpose
  start_server "$work/repo" $flags || continue
  measure "server $flags: streams, c64 over 16 connections" \
    "--concurrency 64 --connections 16 --streaming"
  stop_server
done

# Concurrency 1 (M=2, no batching, as serve_bench's latency runs), one
# call a request against streams: p50, the floor (a unary ServerLive) and
# the served overhead (p50 - floor - full-chunk replay), three runs each.
"$bin/make_demo_repository" --out "$work/repo_m2" --streams 2 >/dev/null
if start_server "$work/repo_m2"; then
  for batch in 1 16; do
    for how in "one call a request" streams; do
      streaming=()
      [[ "$how" == streams ]] && streaming=(--streaming)
      for r in 1 2 3; do
        csv="$work/c1_${batch}_${how// /_}_$r.csv"
        perf "$csv" --batch-size "$batch" --concurrency 1 --connections 1 --floor-windows 1 \
          "${streaming[@]}" || failures=$((failures + 1))
        python3 - "$csv" "mlp b$batch, c1, $how, r$r" <<'PY' | tee -a "$results"
import csv, sys
row = next(csv.DictReader(open(sys.argv[1])))
print(f"{sys.argv[2]}: p50 {row['p50 latency']} us, floor p50 {row['Floor p50 latency']} us, "
      f"replay {row['Full-chunk replay']} us, overhead {row['Served overhead']} us")
PY
      done
    done
  done
  stop_server
fi

# A free slot waits up to 100 us for a fuller chunk.
cp -r "$work/repo" "$work/repo_delay"
for config in "$work/repo_delay"/*/config.pbtxt; do
  sed -i 's/^dynamic_batching { }$/dynamic_batching { max_queue_delay_microseconds: 100 }/' "$config"
done
if start_server "$work/repo_delay"; then
  measure "max_queue_delay_microseconds 100: streams, c64 over 16 connections" \
    "--concurrency 64 --connections 16 --streaming"
  measure "max_queue_delay_microseconds 100: one call a request, c64 over 16 connections" \
    "--concurrency 64 --connections 16"
  stop_server
fi

rm -rf "$work"
echo "stream_probe: $failures failures"
exit $((failures > 0))
