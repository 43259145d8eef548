#!/usr/bin/env bash
# Sets up the machine (deploy/setup.sh), builds graphserve optimised, and
# serves: without flags, the demo repository (the example models) on gRPC port
# 8001, on the GPU when one is visible and loudly on the host executor when
# not. Every argument goes to graphserve, e.g.
#   ./deploy/serve.sh --model-repository /models --grpc-port 9001
#   ./deploy/serve.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."

./deploy/setup.sh
bazel build -c opt //server:graphserve
# The opt output folder itself: the bazel-bin link may point at another
# configuration (a later `bazel test`).
bin_dir=$(bazel info -c opt bazel-bin 2>/dev/null)
exec "$bin_dir/server/graphserve" "$@"
