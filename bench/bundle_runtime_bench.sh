#!/usr/bin/env bash
# Builds //bench:runtime_bench optimised (-c opt: the host side of an eager
# run is part of what it times) and copies it, with the shared libraries it
# loads from this (Debian) machine's system that an Ubuntu GPU image may lack
# (Abseil, ONNX, Protobuf, spdlog, fmt), into DEST (default out/runtime_bench,
# git-ignored) so that it can be carried to the GPU machine:
#   DEST/runtime_bench, DEST/lib/*.so*
# bench/run_runtime_bench.py puts DEST/lib on the binary's LD_LIBRARY_PATH.
# glibc, libstdc++ and the CUDA libraries (found through the binary's rpath,
# /usr/local/cuda/lib64) are taken from the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-out/runtime_bench}"
# --symlink_prefix=/ leaves the bazel-* convenience links (which others in
# this tree use) pointing where they were.
bazel build -c opt --symlink_prefix=/ //bench:runtime_bench
binary="$(bazel info -c opt bazel-bin)/bench/runtime_bench"
mkdir -p "${dest}/lib"
cp -f "${binary}" "${dest}/runtime_bench"
chmod u+w "${dest}/runtime_bench"
ldd "${binary}" | awk '$3 ~ /^\// {print $3}' |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so|/usr/local/cuda|ld-linux' |
  while read -r lib; do cp -fL "${lib}" "${dest}/lib/"; done
du -sh "${dest}"
