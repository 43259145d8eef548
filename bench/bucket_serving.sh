#!/usr/bin/env bash
# gpu_check.sh BUNDLE buckets: bench/bucket_serving.py on the bundle's
# core_bench. BUCKET_PARTS (comma-separated: bert, pad512, streams4, eager,
# gpt2, vision, grid8x8, per_length, prepared, history, reselect, reselect_demand,
# shm, fine_grid, planner_costs) narrows it when time is short (history,
# reselect, reselect_demand, shm, fine_grid and planner_costs are not in the
# default set);
# BUCKET_E2E=all runs the whole end-to-end suite on CUDA first, not only its
# shape tests.
#
#   bench/bucket_serving.sh BIN_DIR OUT_DIR
set -uo pipefail
bin="$1"
out="$2"
status=0
# First the serving path's GPU tests that shape buckets touch: padded rows
# through staging, and buckets end to end on the CUDA executor.
e2e_filter='*Shape*:*Classification*'
[[ "${BUCKET_E2E:-}" == all ]] && e2e_filter='*'
GRAPHSERVE_E2E_DEVICE=cuda "$bin/server_e2e_test" --gtest_filter="$e2e_filter" || status=1
"$bin/graph_set_runner_test" || status=1
"$bin/graph_set_runner_lost_context_test" || status=1
args=(--bin "$bin" --work /tmp/graphserve-buckets --out "$out")
if [[ -n "${BUCKET_PARTS:-}" ]]; then args+=(--parts "$BUCKET_PARTS"); fi
python3 bench/bucket_serving.py "${args[@]}" || status=1
exit "$status"
