#!/usr/bin/env bash
# Where a request's bytes spend their time on the way in: mlp at concurrency 1
# with 32 KiB (batch 16) and 1 MiB (batch 512) requests in the message, and
# 1 MiB through system shared memory, on servers and clients given different
# gRPC transport settings (--grpc-channel-args on both sides); then the same
# small requests over TCP and the server's Unix socket; then the server's own
# request time (its statistics' total) beside perf's breakdown for 1 MiB in
# system shared memory. Each measurement is one 2 s window with its floor.
# Called by bench/gpu_check.sh with the unpacked bundle's bin folder.
#
#   bench/transport_probe.sh BIN_DIR OUT_DIR
set -uo pipefail
bin=$1
out=$2
work=$(mktemp -d)
mkdir -p "$out"
failures=0
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" || exit 2

"$bin/make_demo_repository" --out "$work/repo" --streams 2 --max-batch-size 512 \
  --batch-sizes 1,2,4,16,64,256,512 >/dev/null
results="$out/transport_probe.csv"
: >"$results"
probe() {  # probe SETTING URL CLIENT_ARGS BATCH SHM
  local csv="$work/probe.csv"
  if "$bin/graphserve-client" --url "$2" --grpc-channel-args "$3" perf --model mlp \
    --batch-size "$4" --concurrency 1 --shared-memory "$5" --warmup-secs 0.5 \
    --measurement-interval-ms 2000 --windows 1 --floor-windows 1 --csv "$csv" >/dev/null; then
    [[ -s "$results" ]] || sed -n 1p "$csv" | sed 's/^/setting,url,batch,input path,/' >"$results"
    echo "$1,$2,$4,$5,$(tail -n 1 "$csv")" | tee -a "$results"
  else
    echo "transport_probe: perf failed ($1 $2 b$4 $5)"
    failures=$((failures + 1))
  fi
}

# Each setting goes to the server and the client alike.
declare -A settings=(
  [default]=""
  [lookahead8m]="grpc.http2.lookahead_bytes=8388608"
  [frame1m]="grpc.http2.max_frame_size=1048576"
  [read1m]="grpc.experimental.tcp_read_chunk_size=1048576,grpc.experimental.tcp_min_read_chunk_size=65536"
  [nobdp_lookahead8m]="grpc.http2.bdp_probe=0,grpc.http2.lookahead_bytes=8388608"
  [all]="grpc.http2.lookahead_bytes=8388608,grpc.http2.max_frame_size=1048576,grpc.experimental.tcp_read_chunk_size=1048576,grpc.experimental.tcp_min_read_chunk_size=65536"
)
for name in default lookahead8m frame1m read1m nobdp_lookahead8m all default; do
  args=${settings[$name]}
  echo "--- $name: ${args:-the defaults}"
  if start_server "$work/repo" --grpc-channel-args "$args" >/dev/null; then
    for batch in 16 512; do probe "$name" "localhost:$port" "$args" "$batch" none; done
    probe "$name" "localhost:$port" "$args" 512 system
    stop_server >/dev/null
  fi
done

echo "--- TCP vs the Unix socket, default settings"
socket="$work/graphserve.sock"
if start_server "$work/repo" --grpc-address "unix:$socket" >/dev/null; then
  for url in "localhost:$port" "unix:$socket" "localhost:$port" "unix:$socket"; do
    for batch in 1 16; do probe unix_vs_tcp "$url" "" "$batch" none; done
  done
  stop_server >/dev/null
fi

echo "--- the server's own time for 1 MiB in system shared memory (a fresh server)"
if start_server "$work/repo" >/dev/null; then
  probe stats "localhost:$port" "" 512 system
  "$bin/graphserve-client" --url "localhost:$port" stats --model mlp | tee "$out/shm_b512_stats.txt"
  stop_server >/dev/null
fi
rm -rf "$work"
echo "transport_probe: $failures failures"
exit $((failures > 0))
