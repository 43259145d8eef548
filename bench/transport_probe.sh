#!/usr/bin/env bash
# Where a request's time goes outside the server at concurrency 1 (mlp): the
# host's CPU idle states, and requests with four other cores kept busy beside
# them (wake-ups from deep idle states); TCP against the server's Unix
# socket; and per input path (message, system and CUDA shared memory) and
# size (4 KiB, 1 MiB) the server's own time (its statistics' total) beside
# the client's. Then shared memory's outputs against the message path's, and
# CUDA shared-memory requests merged by dynamic batching.
# Each measurement is one 2 s window with its floor. (Its first version, at
# commit 588bfa6, compared gRPC transport settings: --grpc-channel-args.)
# Called by bench/gpu_check.sh with the unpacked bundle's bin folder.
#
#   bench/transport_probe.sh BIN_DIR OUT_DIR
set -uo pipefail
# bin, out, work, failures and the server's helpers (bench/serve_server.sh).
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@" || exit 2

"$bin/make_demo_repository" --out "$work/repo" --streams 2 --max-batch-size 512 \
  --batch-sizes 1,2,4,16,64,256,512 >/dev/null
results="$out/transport_probe.csv"
: >"$results"
probe() {  # probe LABEL URL BATCH SHM
  local csv="$work/probe.csv"
  if "$bin/graphserve-client" --url "$2" perf --model mlp \
    --batch-size "$3" --concurrency 1 --shared-memory "$4" --warmup-secs 0.5 \
    --measurement-interval-ms 2000 --windows 1 --floor-windows 1 --csv "$csv" >/dev/null; then
    [[ -s "$results" ]] || sed -n 1p "$csv" | sed 's/^/label,url,batch,input path,/' >"$results"
    echo "$1,$2,$3,$4,$(tail -n 1 "$csv")" | tee -a "$results"
  else
    echo "transport_probe: perf failed ($1 $2 b$3 $4)"
    failures=$((failures + 1))
  fi
}

# The host's CPU idle states: how long a sleeping core takes to wake up, which
# every request at concurrency 1 pays on the server's and the client's side.
for state in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
  [[ -r "$state/name" ]] && echo "cpu0 idle state $(cat "$state/name"): exit latency $(cat "$state/latency") us, disabled $(cat "$state/disable" 2>/dev/null)"
done | tee "$out/cpu_idle_states.txt"
echo "cpufreq governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none)" |
  tee -a "$out/cpu_idle_states.txt"

echo "--- concurrency 1 with and without busy cores beside it (idle-state wake-ups)"
if start_server "$work/repo" >/dev/null; then
  for round in 1 2; do
    probe quiet "localhost:$port" 1 none
    probe quiet "localhost:$port" 16 none
    # Four cores kept busy by plain shell loops, outside server and client.
    spinners=()
    trap 'kill "${spinners[@]}" 2>/dev/null' EXIT
    for _ in 1 2 3 4; do
      bash -c 'while :; do :; done' &
      spinners+=($!)
    done
    probe busy_cores "localhost:$port" 1 none
    probe busy_cores "localhost:$port" 16 none
    kill "${spinners[@]}" 2>/dev/null
    wait "${spinners[@]}" 2>/dev/null
  done
  stop_server >/dev/null
fi

echo "--- the server's own time against the client's, per input path (a fresh server each)"
for path in none system cuda; do
  for batch in 2 512; do
    if start_server "$work/repo" >/dev/null; then
      probe own_time "localhost:$port" "$batch" "$path"
      # In the console only: the device tool brings back 8 files.
      "$bin/graphserve-client" --url "localhost:$port" stats --model mlp
      stop_server >/dev/null
    fi
  done
done

echo "--- shared memory's outputs against the message path's, sizes captured, padded and split"
if start_server "$work/repo" >/dev/null; then
  for batch in 1 5 24 100 512; do
    for path in none system cuda; do
      "$bin/graphserve-client" --url "localhost:$port" infer --model mlp --batch-size "$batch" \
        --seed 7 --shared-memory "$path" --output-dir "$work/infer_${path}" >/dev/null ||
        failures=$((failures + 1))
    done
    for path in system cuda; do
      if cmp -s "$work/infer_none/y.bin" "$work/infer_${path}/y.bin"; then
        echo "batch $batch: $path shared memory gives the message path's outputs"
      else
        echo "transport_probe: batch $batch: $path shared memory's outputs differ"
        failures=$((failures + 1))
      fi
    done
  done
  stop_server >/dev/null
fi

echo "--- merged chunks of CUDA shared-memory requests (dynamic batching, 16 concurrent)"
"$bin/make_demo_repository" --out "$work/repo_batching" --streams 2 >/dev/null
with_batching "$work/repo_batching"
if start_server "$work/repo_batching" >/dev/null; then
  for path in none cuda; do
    "$bin/graphserve-client" --url "localhost:$port" perf --model mlp --batch-size 1 \
      --concurrency 16 --shared-memory "$path" --warmup-secs 0.5 --measurement-interval-ms 2000 \
      --windows 1 --floor-windows 0 | tail -n 3 || failures=$((failures + 1))
  done
  # Fewer executions than inferences: requests were merged; and none failed.
  "$bin/graphserve-client" --url "localhost:$port" stats --model mlp | tee "$work/stats.txt"
  # Columns: model, version, inferences, executions, success, fail.
  merged='$1 == "mlp" { merged = $4 < $3 && $6 == 0 } END { exit !merged }'
  if ! awk "$merged" "$work/stats.txt"; then
    echo "transport_probe: no merged executions, or failed requests, in the stats above"
    failures=$((failures + 1))
  fi
  stop_server >/dev/null
fi

echo "--- TCP vs the Unix socket, default settings"
socket="$work/graphserve.sock"
if start_server "$work/repo" --grpc-address "unix:$socket" >/dev/null; then
  for url in "localhost:$port" "unix:$socket" "localhost:$port" "unix:$socket"; do
    for batch in 1 16; do probe unix_vs_tcp "$url" "$batch" none; done
  done
  stop_server >/dev/null
fi

rm -rf "$work"
echo "transport_probe: $failures failures"
exit $((failures > 0))
