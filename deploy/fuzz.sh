#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, --config=fuzz: clang, ASan, UBSan) and
# runs each for SECONDS (default 30) on a scratch copy of its seed corpus.
# Fails on the first crash, leak, timeout or sanitizer report, leaving the
# input under fuzz/crashes/<target>/ to add to the corpus once fixed. Prints
# one line per target: executions, seconds, corpus size.
# Usage: deploy/fuzz.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

seconds="${1:-30}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(infer_request_fuzz http_json_fuzz http_framing_fuzz request_framing_fuzz
           model_config_fuzz onnx_model_fuzz batch_history_fuzz)
fi

# gold warns, once per ASan check helper of clang's runtime, that it cannot
# export a local symbol: harmless, and 800 lines that would push the runs'
# own output out of a CI log.
# shellcheck disable=SC2046,SC2086  # BAZEL_FLAGS and the targets: words
bazel build --config=fuzz ${BAZEL_FLAGS:-} $(printf '//fuzz:%s ' "${targets[@]}") 2>&1 |
  grep -v "warning: Cannot export local symbol '__asan"
((PIPESTATUS[0] == 0)) || exit 1

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for target in "${targets[@]}"; do
  corpus="$scratch/$target"
  cp -r "fuzz/corpus/$target" "$corpus"
  mkdir -p "fuzz/crashes/$target"
  log="$scratch/$target.log"
  start=$(date +%s)
  # -rss_limit_mb / -malloc_limit_mb: a single input may not take more than
  # 2 GiB (ASan's shadow aside); -timeout: nor more than 25 s.
  "bazel-bin/fuzz/$target" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=3072 \
    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="fuzz/crashes/$target/" \
    "$corpus" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - start))
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  echo "fuzz: $target: ${runs} executions in ${elapsed} s, exit ${rc}, corpus $(ls "$corpus" | wc -l) inputs"
  if ((rc != 0)); then
    tail -60 "$log"
    status=1
  else
    rmdir "fuzz/crashes/$target" 2>/dev/null
  fi
done
rmdir fuzz/crashes 2>/dev/null
exit "$status"
