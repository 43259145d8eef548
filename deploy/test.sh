#!/usr/bin/env bash
# Sets up the machine (deploy/setup.sh) and runs GraphServe's whole test suite:
# every unit test, the ONNX conformance suite on the host executor, the
# compatibility tests with Triton's clients (on the venv setup.sh builds, named
# by GRAPHSERVE_PYTHON) and the GPU tests (which skip themselves, saying why,
# on a machine without a GPU); then, on clang, the server, client, runtime
# and fuzz-corpus tests under AddressSanitizer and UndefinedBehaviorSanitizer,
# the threaded server tests under ThreadSanitizer, and every fuzz target for
# GRAPHSERVE_FUZZ_SECONDS (default 30) each (deploy/fuzz.sh).
# GRAPHSERVE_SANITIZERS picks the clang stages: "tsan" (the default, and what
# CI runs) the ThreadSanitizer stage only; "all" (or "1") every stage; "0"
# none. Every stage together has not been timed under CI's 90 minutes on a
# clean clone (measured per stage only, below).
# Ends with one line "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."

./deploy/setup.sh || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
bazel test //... --test_env=GRAPHSERVE_PYTHON="$PWD/.pyenv/bin/python" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# Sanitized test sets: the packages that parse outside input or run threads
# (the server, the client, the size planner the server runs, the runtime's
# import, binding and host kernels, the fuzz corpora). The GPU tests and the
# ONNX conformance suite stay on gcc: they are slow under the sanitizers and,
# without a GPU, run the same host code the runtime tests cover.
SANITIZED_TESTS=(//server/... //client/... //fuzz/... //planning/...
                 //runtime:all //runtime/host/...)
# TSan: the tests of code that runs threads (stream workers, responders,
# queues, the registry's control thread, listeners).
# Measured on 2 shared cores from a warm gcc disk cache (2026-11-28): asan
# 16 min for 54 tests, ubsan 12 min, tsan 7 min for 21 tests, the fuzz build
# 6 min and the runs 3 min: about 45 min beside the gcc suite.
THREADED_TESTS=(//server/...)

sanitizers="${GRAPHSERVE_SANITIZERS:-tsan}"
case "$sanitizers" in
  0 | tsan | all | 1) ;;
  *) echo "test: GRAPHSERVE_SANITIZERS should be tsan, all or 0, not '$sanitizers'" >&2; exit 2 ;;
esac
if [[ "$sanitizers" == all || "$sanitizers" == 1 ]]; then
  for config in asan ubsan; do
    echo "test: --config=$config"
    bazel test --config="$config" "${SANITIZED_TESTS[@]}" 2>&1 | tee -a "$log"
    ((PIPESTATUS[0] == 0)) || status=1
  done
fi
if [[ "$sanitizers" != 0 ]]; then
  echo "test: --config=tsan"
  bazel test --config=tsan "${THREADED_TESTS[@]}" 2>&1 | tee -a "$log"
  ((PIPESTATUS[0] == 0)) || status=1
fi
if [[ "$sanitizers" == all || "$sanitizers" == 1 ]]; then
  echo "test: fuzz targets, ${GRAPHSERVE_FUZZ_SECONDS:-30} s each"
  if ./deploy/fuzz.sh "${GRAPHSERVE_FUZZ_SECONDS:-30}" 2>&1 | tee -a "$log"; then
    echo "//fuzz:libfuzzer_runs PASSED" >>"$log"
  else
    echo "//fuzz:libfuzzer_runs FAILED" >>"$log"
    status=1
  fi
fi

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
if [[ $status -ne 0 && $failed -eq 0 ]]; then failed=1; fi  # the build itself failed
echo "${passed} passed, ${failed} failed"
exit "$status"
