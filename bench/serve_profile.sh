#!/usr/bin/env bash
# Where the server's and the load generator's CPU goes, sampled by
# gperftools' CPU profiler (libprofiler, preloaded; the device machine has no
# other profiler): the graphs-on batching server saturated (batch 1, 64
# concurrent over 16 connections, M=4), then the same over ModelStreamInfer
# streams, then mlp batch 16 at concurrency 1.
# Each run writes one profile per process; read them here with the bundle's
# binaries unpacked at the same path (bench/README.md, "Profiles"), from a
# bundle built with GPU_BUNDLE_SYMBOLS=1 (bench/gpu_bundle.sh strips symbol
# tables otherwise, and the profile then names addresses only).
# Called by bench/gpu_check.sh with the unpacked bundle's bin folder.
#
#   bench/serve_profile.sh BIN_DIR OUT_DIR
set -uo pipefail
# bin, out, work, failures and the server's helpers (bench/serve_server.sh).
# shellcheck source=bench/serve_server.sh
source "$(dirname "$0")/serve_server.sh" "$@" || exit 2
# The profiler and the unwinder it needs, both preloaded by path (their
# folder is on no library path).
profiler_dir="$bin/../profiler"
profiler="$profiler_dir/libunwind.so.8 $profiler_dir/libprofiler.so.0"
if [[ ! -f "$profiler_dir/libprofiler.so.0" || ! -f "$profiler_dir/libunwind.so.8" ]]; then
  echo "serve_profile: no profiler in the bundle ($profiler_dir; google-perftools was not installed where it was built)"
  exit 1
fi
# Samples asked for per second of CPU each process uses (a multi-threaded
# process gets fewer: bench/README.md, "Profiles").
export CPUPROFILE_FREQUENCY=1000

# Each server writes its profile as it exits (stop_server).
profiled_server() {  # profiled_server PROFILE REPO [extra flags...]
  local profile=$1
  shift
  server_launcher=(env LD_PRELOAD="$profiler" CPUPROFILE="$profile")
  start_server "$@"
}
perf() {  # perf PROFILE [flags...]: one 4 s window, profiled
  local profile=$1
  shift
  LD_PRELOAD="$profiler" CPUPROFILE="$profile" "$bin/graphserve-client" --url "localhost:$port" \
    perf --warmup-secs 0.5 --measurement-interval-ms 4000 --windows 1 --floor-windows 0 "$@" ||
    failures=$((failures + 1))
}

"$bin/make_demo_repository" --out "$work/repo_batching" --streams 4 >/dev/null
with_batching "$work/repo_batching"
"$bin/make_demo_repository" --out "$work/repo_m2" --streams 2 >/dev/null

echo "--- saturated: graphs on, dynamic batching, mlp batch 1, 64 concurrent, 16 connections"
if profiled_server "$out/server_saturated.prof" "$work/repo_batching" --graphs on; then
  perf "$out/perf_saturated.prof" --model mlp --batch-size 1 --concurrency 64 --connections 16
  stop_server
fi
echo "--- the same over ModelStreamInfer streams (perf --streaming)"
if profiled_server "$out/server_streamed.prof" "$work/repo_batching" --graphs on; then
  perf "$out/perf_streamed.prof" --model mlp --batch-size 1 --concurrency 64 --connections 16 \
    --streaming
  stop_server
fi
echo "--- concurrency 1: mlp batch 16, M=2"
if profiled_server "$out/server_c1_b16.prof" "$work/repo_m2"; then
  perf "$out/perf_c1_b16.prof" --model mlp --batch-size 16 --concurrency 1 --connections 1
  stop_server
fi
# The system libraries the profiles name, from this machine: its C library
# is not the build machine's, and its addresses would name the wrong
# functions there. CUDA's driver and cuDNN are left out (large, and without
# symbols).
sed -n '/^[0-9a-f]*-[0-9a-f]* r-xp/ s/.* \(\/usr\/lib[^ ]*\|\/lib[^ ]*\)$/\1/p' \
  "$out"/*.prof 2>/dev/null | grep -v -e libcuda -e libcudnn | sort -u | xargs -r tar -czhf "$out/system_libs.tar.gz" 2>/dev/null
ls -l "$out"
rm -rf "$work"
echo "serve_profile: $failures failures"
exit $((failures > 0))
