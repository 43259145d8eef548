# shellcheck shell=bash
# What the serving scripts (serve_bench.sh, serve_profile.sh and the probes)
# share: their arguments and scratch, and the server side, a demo repository
# with dynamic batching and starting and stopping a graphserve. Each sources
# it first, with its own arguments:
#
#   source "$(dirname "$0")/serve_server.sh" "$@"   # BIN_DIR OUT_DIR
#
# which sets
#   bin       the bundle's bin folder (BIN_DIR)
#   out       where the script's results go (OUT_DIR, made here)
#   work      a fresh scratch folder (the server's log goes there)
#   failures  the script's failure count, raised here too
# and, optionally, the script sets server_launcher: words put before the
# server's command (serve_profile.sh preloads its profiler that way, for the
# server alone).
if (($# < 2)); then
  echo "usage: $(basename "$0") BIN_DIR OUT_DIR" >&2
  exit 2
fi
bin=$1
out=$2
work=$(mktemp -d)
mkdir -p "$out"
failures=0

# Turns dynamic batching on for every model of a demo repository (Triton's
# config field; an empty message: merge when a slot frees, no delay).
with_batching() {
  for config in "$1"/*/config.pbtxt; do echo "dynamic_batching { }" >>"$config"; done
}

port=8001
server_pid=""
server_launcher=()
start_server() {  # start_server REPO [extra flags...]
  local repo=$1
  shift
  ${server_launcher[@]+"${server_launcher[@]}"} "$bin/graphserve" --model-repository "$repo" \
    --grpc-port "$port" --device cuda "$@" >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    if grep -q "serving gRPC on" "$work/server.log"; then
      cat "$work/server.log"
      return 0
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "$(basename "$0"): the server did not start:"
  cat "$work/server.log"
  failures=$((failures + 1))
  return 1
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null
  if ! wait "$server_pid"; then
    echo "$(basename "$0"): the server did not exit 0 on SIGTERM"
    failures=$((failures + 1))
  fi
  tail -n 3 "$work/server.log"
}

# CPU seconds (user + system) a live process has used.
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}
