#!/usr/bin/env bash
# Sets up the machine (deploy/setup.sh) and runs GraphServe's whole test suite:
# every unit test, the ONNX conformance suite on the host executor, the
# compatibility tests with Triton's clients (on the venv setup.sh builds, named
# by GRAPHSERVE_PYTHON) and the GPU tests (which skip themselves, saying why,
# on a machine without a GPU); then, on clang: the server, client, planning,
# runtime and fuzz-corpus tests under AddressSanitizer (with LeakSanitizer)
# and UndefinedBehaviorSanitizer in one build (--config=asan_ubsan), every
# libFuzzer target for GRAPHSERVE_FUZZ_SECONDS (default 30) each, linked from
# that build's objects (deploy/fuzz.sh), and the threaded server tests under
# ThreadSanitizer.
# GRAPHSERVE_SANITIZERS picks the clang stages: "all" (or "1"; the default,
# and what CI runs) every one; "tsan" the ThreadSanitizer stage only; "0"
# none. The asan and ubsan configurations alone stay for runs by hand
# (.bazelrc): asan_ubsan finds what either finds.
# Measured as CI runs it (.ci/run on a clean clone: a fresh output base, no
# disk cache) on 2 shared cores, 2026-11-29: 33 min of CI's 90. Setup under
# a minute, gcc 15 min for 169 tests, asan_ubsan 9 min for 76, the fuzz
# targets' link 15 s and their runs 3 min, tsan 6 min for 37. (asan and
# ubsan apart took 16 and 12 min for 54 tests, 2026-11-28.)
# Ends with one line "N passed, M failed, K flaky".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

./deploy/setup.sh || exit 1

# A failed test's output printed whole (CI keeps only what the run
# printed), and a failed test run once more: one that then passes is FLAKY,
# counted and named at the end, not hidden (CI failed once, 2026-11-29, on a
# test its kept tail did not name and no run here repeated).
TEST_FLAGS=(--test_output=errors --flaky_test_attempts=2)

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
bazel test //... "${TEST_FLAGS[@]}" --test_env=GRAPHSERVE_PYTHON="$PWD/.pyenv/bin/python" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# Sanitized test sets: the packages that parse outside input or run threads
# (the server, the client, the size planner the server runs, the runtime's
# import, binding and host kernels, the fuzz corpora). The GPU tests and the
# ONNX conformance suite stay on gcc: they are slow under the sanitizers and,
# without a GPU, run the same host code the runtime tests cover.
SANITIZED_TESTS=(//server/... //client/... //fuzz/... //planning/...
                 //runtime:all //runtime/host/...)
# TSan: the tests of code that runs threads (stream workers, responders,
# queues, the registry's control thread, listeners, the capture lock).
THREADED_TESTS=(//server/... //common:capture_exclusion_test)

sanitizers="${GRAPHSERVE_SANITIZERS:-all}"
case "$sanitizers" in
  0 | tsan | all | 1) ;;
  *) echo "test: GRAPHSERVE_SANITIZERS should be all, tsan or 0, not '$sanitizers'" >&2; exit 2 ;;
esac
if [[ "$sanitizers" == all || "$sanitizers" == 1 ]]; then
  echo "test: --config=asan_ubsan"
  # Without gold's 11k harmless warnings about clang's ASan check helpers
  # (deploy/fuzz.sh says more).
  bazel test --config=asan_ubsan "${TEST_FLAGS[@]}" "${SANITIZED_TESTS[@]}" 2>&1 |
    grep -v "warning: Cannot export local symbol '__asan" | tee -a "$log"
  ((PIPESTATUS[0] == 0)) || status=1
  # Before the TSan build: --config=fuzz links the targets from the objects
  # asan_ubsan left in bazel-out, which TSan's replace (.bazelrc).
  echo "test: fuzz targets, ${GRAPHSERVE_FUZZ_SECONDS:-30} s each"
  if ./deploy/fuzz.sh "${GRAPHSERVE_FUZZ_SECONDS:-30}" 2>&1 | tee -a "$log"; then
    echo "//fuzz:libfuzzer_runs PASSED" >>"$log"
  else
    echo "//fuzz:libfuzzer_runs FAILED" >>"$log"
    status=1
  fi
fi
if [[ "$sanitizers" != 0 ]]; then
  echo "test: --config=tsan"
  bazel test --config=tsan "${TEST_FLAGS[@]}" "${THREADED_TESTS[@]}" 2>&1 | tee -a "$log"
  ((PIPESTATUS[0] == 0)) || status=1
fi

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed_lines=$(grep -E '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
failed=$(grep -c . <<<"$failed_lines")
flaky_lines=$(grep -E '^//[^ ]+ +FLAKY' "$log")
flaky=$(grep -c . <<<"$flaky_lines")
# The failures again, last: CI keeps the tail of what the run printed, and
# the sanitizer stages print long after the gcc stage's failure.
if [[ -n "$failed_lines" ]]; then
  echo "test: these failed:"
  echo "$failed_lines"
fi
if [[ -n "$flaky_lines" ]]; then
  echo "test: these failed once and passed on their second attempt (FLAKY):"
  echo "$flaky_lines"
fi
if [[ -n "$failed_lines$flaky_lines" ]]; then
  # Each failed attempt's output as --test_output=errors printed it, its
  # last 40 lines (a test's log in bazel-out is overwritten by later runs).
  awk '/^=+ Test output for /{n=0; inside=1}
       inside{block[++n]=$0}
       inside && /^=+$/{from=(n>41)?n-40:1; print block[1];
                        for(i=from;i<=n;i++) if(i>1) print block[i]; inside=0}' "$log"
fi
if [[ $status -ne 0 && $failed -eq 0 ]]; then failed=1; fi  # the build itself failed
echo "${passed} passed, ${failed} failed, ${flaky} flaky"
exit "$status"
