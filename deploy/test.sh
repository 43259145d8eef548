#!/usr/bin/env bash
# Sets up the machine (deploy/setup.sh) and runs GraphServe's whole test suite:
# every unit test, the ONNX conformance suite on the host executor, the
# compatibility tests with Triton's clients (on the venv setup.sh builds, named
# by GRAPHSERVE_PYTHON) and the GPU tests (which skip themselves, saying why,
# on a machine without a GPU).
# Ends with one line "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."

./deploy/setup.sh || exit 1

log=$(mktemp)
bazel test //... --test_env=GRAPHSERVE_PYTHON="$PWD/.pyenv/bin/python" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
rm -f "$log"
if [[ $status -ne 0 && $failed -eq 0 ]]; then failed=1; fi  # the build itself failed
echo "${passed} passed, ${failed} failed"
exit "$status"
