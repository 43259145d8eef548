#!/usr/bin/env bash
# Scratch: is the half-load plateau per connection (HTTP/2) or per outstanding count?
set -uo pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
work=/tmp/graphserve-gpu
rm -rf "$work" && mkdir -p "$work" && tar -C /tmp -xzf .bundle/graphserve-gpu.tar.gz
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${cudnn_lib}:${LD_LIBRARY_PATH:-}"
bin="$work/bin"; failures=0
source bench/serve_server.sh
"$bin/make_demo_repository" --out "$work/repo_plain" --streams 4 >/dev/null
run_level() {  # label flags...
  local label=$1; shift
  "$bin/graphserve-client" --url "localhost:$port" perf --model mlp --batch-size 1 \
    --warmup-secs 0.5 --windows 1 --floor-windows 0 --measurement-interval-ms 3000 \
    --timeline "$work/tl_$label.csv" "$@" 2>&1 | grep -E "throughput|behind|delayed" | sed "s/^/$label: /"
  python3 bench/timeline_report.py "$work/tl_$label.csv" | sed -n '1p;/stalls/p' | sed "s/^/$label: /"
}
for flags in "--run-on-rpc-thread=false" ""; do
  echo "=== server flags: ${flags:-default}"
  start_server "$work/repo_plain" --graphs on $flags >/dev/null || continue
  "$bin/graphserve-client" --url "localhost:$port" perf --model mlp --batch-size 1 --connections 16 \
    --concurrency 64 --measurement-interval-ms 1000 --windows 1 --floor-windows 0 --csv "$work/sat.csv" | grep throughput
  rate=$(python3 -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print(int(float(r[0]["Inferences/Second"]) / 2))' "$work/sat.csv")
  for round in 1 2; do
    run_level "c16_r$round" --connections 16 --request-rate "$rate"
    run_level "c64_r$round" --connections 64 --request-rate "$rate"
    run_level "c16_cap128_r$round" --connections 16 --request-rate "$rate" --max-outstanding 128
    run_level "c16_conc1024_r$round" --connections 16 --concurrency 1024
    run_level "c64_conc1024_r$round" --connections 64 --concurrency 1024
  done
  stop_server
done
