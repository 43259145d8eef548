#!/usr/bin/env bash
# Issue 31, on the GPU machine: Triton's GPU-side metrics beside the CPU ones.
# graphserve serves the demo repository on CUDA; after one inference the
# metrics page must show the GPU's enforced power limit (watts), an energy
# counter that grows between two scrapes (joules), the loaded models' pinned
# staging, and the CPU gauges.
#
#   bench/gpu_metrics_check.sh BIN_DIR OUT_DIR   (LD_LIBRARY_PATH as gpu_check.sh sets it)
set -uo pipefail
bin="$1"
out="$2"
repo=$(mktemp -d)
"$bin/make_demo_repository" --out "$repo" >/dev/null
"$bin/graphserve" --model-repository "$repo" --device cuda --grpc-port 18701 --http-port 18700 \
  --metrics-port 18702 --metrics-interval-ms 500 >"$out/metrics_server.log" 2>&1 &
pid=$!
for _ in $(seq 120); do grep -q "serving gRPC" "$out/metrics_server.log" && break; sleep 1; done
"$bin/graphserve-client" --url localhost:18701 infer --model mlp --batch-size 3 >/dev/null 2>&1
scrape() { python3 -c 'import urllib.request; print(urllib.request.urlopen("http://localhost:18702/metrics").read().decode())'; }
scrape >"$out/metrics_first.txt"
sleep 2
scrape >"$out/metrics_second.txt"
kill "$pid"
wait "$pid"
python3 - "$out/metrics_first.txt" "$out/metrics_second.txt" <<'PY'
import re, sys
def values(path):
    found = {}
    for line in open(path):
        m = re.match(r'^(nv_[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$', line.strip())
        if m:
            found.setdefault(m.group(1), float(m.group(3)))
    return found
first, second = values(sys.argv[1]), values(sys.argv[2])
checks = [
    ("nv_gpu_power_limit > 0 W", first.get("nv_gpu_power_limit", 0) > 0),
    ("nv_energy_consumption grows", "nv_energy_consumption" in first and
     second.get("nv_energy_consumption", 0) > first["nv_energy_consumption"]),
    ("nv_pinned_memory_pool_total_bytes > 0", first.get("nv_pinned_memory_pool_total_bytes", 0) > 0),
    ("nv_cpu_memory_total_bytes > 0", first.get("nv_cpu_memory_total_bytes", 0) > 0),
    ("nv_cpu_utilization in [0, 1]", 0 <= second.get("nv_cpu_utilization", -1) <= 1),
]
for name in ("nv_gpu_power_limit", "nv_energy_consumption", "nv_pinned_memory_pool_total_bytes",
             "nv_pinned_memory_pool_used_bytes", "nv_cpu_utilization", "nv_cpu_memory_total_bytes",
             "nv_cpu_memory_used_bytes"):
    print(f"{name}: {first.get(name)} then {second.get(name)}")
failed = [name for name, ok in checks if not ok]
for name, ok in checks:
    print(("ok     " if ok else "FAILED ") + name)
sys.exit(1 if failed else 0)
PY
