#!/usr/bin/env bash
# A/B at concurrency 1: the server of this session (graphserve) against the one
# before it (graphserve_base, built at e7cd98e), alternating on one machine.
set -uo pipefail
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
work=/tmp/graphserve-gpu
rm -rf "$work" && mkdir -p "$work" && tar -C /tmp -xzf .bundle/graphserve-gpu.tar.gz
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${cudnn_lib}:${LD_LIBRARY_PATH:-}"
bin="$work/bin"; failures=0
"$bin/make_demo_repository" --out "$work/repo_m2" --streams 2 >/dev/null
port=8001
: >"$OUT/ab_c1.csv"
for round in 1 2 3; do
  for server in graphserve graphserve_base; do
    "$bin/$server" --model-repository "$work/repo_m2" --grpc-port $port --device cuda >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do grep -q "serving gRPC on" "$work/server.log" && break; sleep 0.1; done
    for model in mlp dlrm_dense; do
      for batch in 1 3 16; do
        "$bin/graphserve-client" --url "localhost:$port" perf --model $model --batch-size $batch \
          --concurrency 1 --warmup-secs 0.5 --measurement-interval-ms 1000 --windows 1 \
          --floor-windows 1 --csv "$work/p.csv" >/dev/null || failures=$((failures + 1))
        [[ -s "$OUT/ab_c1.csv" ]] || sed -n 1p "$work/p.csv" | sed 's/^/round,server,model,batch,/' >"$OUT/ab_c1.csv"
        echo "$round,$server,$model,$batch,$(tail -n 1 "$work/p.csv")" >>"$OUT/ab_c1.csv"
      done
    done
    kill -TERM $pid; wait $pid
  done
done
python3 - "$OUT/ab_c1.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = {}
for r in rows:
    cases.setdefault((r["model"], r["batch"], r["server"]), []).append(
        (float(r["p50 latency"]), float(r["Floor p50 latency"]), float(r["Served overhead"] or "nan")))
print("model batch server: median p50, floor p50, overhead (us) over rounds")
for key in sorted(cases):
    v = cases[key]
    print(key, *(round(statistics.median(x[i] for x in v)) for i in range(3)), [round(x[2]) for x in v])
PY
echo "failures $failures"
