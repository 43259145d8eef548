#!/usr/bin/env bash
# Triton's perf_analyzer against graphserve on the GPU, in its shared-memory
# modes: inputs and outputs in CUDA shared memory (perf_analyzer allocates
# them with cudaMalloc and registers their IPC handles; GraphServe copies
# them device to device, Note [CUDA shared memory] in server/shared_memory.h),
# in system shared memory, and in the request, over gRPC and HTTP, on the
# demo repository's mlp (dynamic batching) at batch 1 and 8, concurrency 1
# and 4 (PA_PROTOCOLS and PA_MEMORIES narrow them). Each run must succeed and
# write its CSV; results.md has the throughput and latency of each. The CUDA
# mode is the one the host tests cannot run.
#
#   PERF_ANALYZER=path/to/perf_analyzer bench/perf_analyzer_shm.sh BIN_DIR OUT_DIR
#
# perf_analyzer is tritonclient's build (2.51.0, deploy/setup.sh installs it
# here), which links libcudart.so.12: put it and libb64 on LD_LIBRARY_PATH.
source "$(dirname "$0")/serve_server.sh" "$@"
perf_analyzer=${PERF_ANALYZER:?set PERF_ANALYZER to the perf_analyzer binary}
http_port=8000

repo="$work/repo"
"$bin/make_demo_repository" --out "$repo" >/dev/null || failures=$((failures + 1))
with_batching "$repo"
start_server "$repo" --http-port "$http_port" || exit 1

echo "| protocol | memory | batch | concurrency | infer/s | p50 us | p99 us |" >"$out/results.md"
echo "|---|---|---|---|---|---|---|" >>"$out/results.md"
for protocol in ${PA_PROTOCOLS:-grpc http}; do
  url="127.0.0.1:$port"
  [[ "$protocol" == http ]] && url="127.0.0.1:$http_port"
  for memory in ${PA_MEMORIES:-cuda system none}; do
    for batch in 1 8; do
      name="${protocol}_${memory}_b${batch}"
      "$perf_analyzer" -m mlp -u "$url" -i "$protocol" -b "$batch" --shared-memory "$memory" \
        --concurrency-range 1:4:3 --measurement-interval 1000 --stability-percentage 25 --max-trials 8 --percentile 99 \
        -f "$out/$name.csv" >"$work/$name.log" 2>&1
      status=$?
      if ((status != 0)) || [[ ! -s "$out/$name.csv" ]]; then
        echo "perf_analyzer $name failed ($status):"
        tail -n 20 "$work/$name.log"
        failures=$((failures + 1))
        echo "| $protocol | $memory | $batch | - | failed | | |" >>"$out/results.md"
        continue
      fi
      # CSV: Concurrency, Inferences/Second, Client Send, ..., p50/p90/p95/p99 latency.
      python3 - "$out/$name.csv" "$protocol" "$memory" "$batch" >>"$out/results.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for row in sorted(rows, key=lambda r: int(r["Concurrency"])):
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {row['Concurrency']} | "
          f"{float(row['Inferences/Second']):.0f} | {row['p50 latency']} | {row['p99 latency']} |")
PY
    done
  done
done
stop_server
cat "$out/results.md"
exit $((failures > 0))
