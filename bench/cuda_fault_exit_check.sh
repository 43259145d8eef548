#!/usr/bin/env bash
# Issue 30 part 2, on the GPU machine: a sticky CUDA error (an illegal address
# injected into mlp's slot 0, GRAPHSERVE_TEST_INJECT_CUDA_FAULT, test-only)
# makes graphserve answer the request INTERNAL naming the lost context, log
# why, and exit 1 so that the orchestrator restarts it.
#
#   bench/cuda_fault_exit_check.sh BIN_DIR OUT_DIR
set -uo pipefail
bin="$1"
out="$2"
repo=$(mktemp -d)
"$bin/make_demo_repository" --out "$repo" >/dev/null
GRAPHSERVE_TEST_INJECT_CUDA_FAULT=mlp:0:illegal-address "$bin/graphserve" --model-repository "$repo" \
  --device cuda --grpc-port 18601 --http-port 18600 --metrics-port 18602 >"$out/fault_server.log" 2>&1 &
pid=$!
for _ in $(seq 120); do grep -q "serving gRPC" "$out/fault_server.log" && break; sleep 1; done
"$bin/graphserve-client" --url localhost:18601 infer --model mlp --batch-size 3 >"$out/fault_client.log" 2>&1
echo "client exit: $?" | tee -a "$out/fault_client.log"
for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
if kill -0 "$pid" 2>/dev/null; then
  echo "FAILED: graphserve still running 30 s after the lost context"; kill -9 "$pid"; exit 1
fi
wait "$pid"
status=$?
echo "graphserve exit: $status"
grep -i "lost" "$out/fault_server.log" | head -5
grep -i "lost\|INTERNAL" "$out/fault_client.log" | head -3
[[ $status -eq 1 ]] && grep -qi "exiting because a CUDA context is lost" "$out/fault_server.log"
