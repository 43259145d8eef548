#!/usr/bin/env bash
# Runs on the H200 machine: the GPU unit tests, the ONNX conformance suite on
# the CUDA executor, the example models, the runtime benchmark against
# PyTorch, prepare, and the CNN benchmark. Everything it prints is also
# written under $OUT (or ./out), in at most 8 files (the device tool brings
# back no more); scratch output stays under /tmp/graphserve-gpu.
#
#   bench/gpu_check.sh [.bundle/graphserve-gpu.tar.xz] [all|serve|serve-only|cnn|tests|profile|transport|tail|multi-gpu|stream|zoo|buckets|ensemble]
#
# `tests` runs the GPU tests, the conformance suite on both executors and
# the example models; `serve` adds the serving benchmarks; `cnn` the tests,
# conv_tuning_probe, the encoder's load targets and the CNN step only; `all`
# (the default) adds the launch overhead, the runtime benchmark against
# PyTorch, prepare and the CNN step to `serve`. In `cnn`, CNN_BATCH_SIZES and CNN_TF32_BATCH_SIZES (default
# 1,3,8,32 and 1,8,32) narrow the CNN runtime benchmark when time is short.
#
# A step fails on a non-zero exit and on what it printed
# (bench/gpu_check_parse.py): a GPU test that skipped (here a skip means it
# did not see the GPU), a conformance run with fewer passes than below, an
# end-to-end suite that does not say it ran on $GRAPHSERVE_E2E_DEVICE, example
# models off the CUDA executor or with NaN. No usable GPU stops it at once.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
bundle_tar="${1:-.bundle/graphserve-gpu.tar.xz}"
steps="${2:-all}"
case "$steps" in all | serve | serve-only | cnn | tests | profile | transport | tail | multi-gpu | stream | zoo | buckets | ensemble) ;; *) echo "usage: $0 [BUNDLE] [all|serve|serve-only|cnn|tests|profile|transport|tail|multi-gpu|stream|zoo|buckets|ensemble]" >&2; exit 2 ;; esac

# Passes of tests/onnx_conformance on the node tests, from the last
# committed results (bench/results/2026-11-21_794844b_capture/gpu_check.log:
# 176 passed, 0 failed on both executors). They must only go up: raise them
# with each committed run that passes more, never lower them to make a run
# pass.
# 574 on both executors at bench/results/2026-11-28_4b90b93_final_h200; 580
# with the 16-bit floats through the math, Softmax, LayerNorm and GEMMs (the
# host here and in CI); with Resize, Upsample, Einsum and the opset-23 ops
# (bench/results/2026-11-28_*_ops_h200): 609 on the host, 607 on CUDA, whose
# GEMMs take no float64 (two float64 Einsums skip there as unsupported);
# with GridSample and ConvTranspose 626 and 624
# (bench/results/2026-11-30_*_detectors_h200, call 46).
CONFORMANCE_MIN_PASSED_CUDA=624
# The newer onnx's node tests: 918 on both executors with the GPU machine's
# onnx 1.23.1 (bench/results/2026-11-28_4b90b93_final_h200), as CI's 1.23.2 on
# the host; with the 16-bit floats 954 on both executors with the GPU
# machine's onnx 1.23.1 (bench/results/2026-11-28_7aa99af_half_h200; CI's
# onnx 1.23.2 writes two fewer that run: 952); with Resize, Upsample, Einsum,
# RMSNormalization, RotaryEmbedding and Attention 1089 on the host, 1087 on
# CUDA (the same two float64 Einsums skip); with GridSample and
# ConvTranspose 1117 and 1115 (call 46, as above).
CONFORMANCE_NEWER_MIN_PASSED_CUDA=1115
CONFORMANCE_NEWER_MIN_PASSED_HOST=1117
CONFORMANCE_MIN_PASSED_HOST=626
# The same per default-domain opset (tests/onnx_conformance_host_test.cc
# keeps the host's in CI): an opset's semantics lost on one executor fails
# even where its total clears the floor. Measured on the H200 at c497820
# (bench/results/2026-11-29_c497820_tf32_h200/8_final_c497820/gpu_check.log),
# raised with GridSample and ConvTranspose at call 46 of
# bench/results/2026-11-30_*_detectors_h200.
CONFORMANCE_OPSET_FLOORS_CUDA=1:11,6:12,7:28,8:1,9:4,10:6,11:42,12:18,13:344,14:49,15:34,16:31,17:44
CONFORMANCE_OPSET_FLOORS_HOST=1:11,6:12,7:28,8:1,9:4,10:6,11:42,12:20,13:344,14:49,15:34,16:31,17:44
CONFORMANCE_NEWER_OPSET_FLOORS_CUDA=1:3,7:24,9:1,11:2,13:213,14:40,15:12,16:44,17:44,18:169,19:47,20:12,21:4,22:110,23:173,24:24,25:87,26:10,27:17,28:79
CONFORMANCE_NEWER_OPSET_FLOORS_HOST=1:3,7:24,9:1,11:2,13:213,14:40,15:12,16:44,17:44,18:169,19:47,20:12,21:4,22:110,23:173,24:24,25:87,26:10,27:17,28:81
# Where $OUT's files go back through the device tool: no more than this.
MAX_OUT_FILES=8

# The server's end-to-end suite runs on the CUDA executor here, and must say
# so ("e2e executor: cuda").
export GRAPHSERVE_E2E_DEVICE=cuda
# Python's output in the log as it comes, not at exit.
export PYTHONUNBUFFERED=1
OUT="${OUT:-$PWD/out}"
mkdir -p "$OUT"
work=/tmp/graphserve-gpu
rm -rf "$work" && mkdir -p "$work" && tar -C /tmp -xJf "$bundle_tar"
mkdir -p "$work/logs"
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
# NVRTC 13 (linked through cuDNN's frontend headers): the toolkit's, else the
# one PyTorch's CUDA 13 wheels bring.
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$work/lib:/usr/local/cuda/lib64:${cudnn_lib}:${nvrtc_lib}:${LD_LIBRARY_PATH:-}"
bin="$work/bin"
parse="bench/gpu_check_parse.py"
log="$OUT/gpu_check.log"
: >"$log"
failures=0

run() {  # run NAME COMMAND...: logs, counts a failure on non-zero exit
  local name=$1
  shift
  echo "=== $name: $*" | tee -a "$log"
  if "$@" 2>&1 | tee -a "$log"; then
    echo "=== $name: ok" | tee -a "$log"
  else
    echo "=== $name: FAILED" | tee -a "$log"
    failures=$((failures + 1))
  fi
}

# checked KIND [CHECK FLAGS...] -- COMMAND...: runs COMMAND with its output in
# a scratch file, then `gpu_check_parse.py KIND [CHECK FLAGS...] FILE`, which
# prints that output (gtest: without the per-test RUN/OK lines) and what it
# found. Fails when COMMAND exits non-zero or the check fails.
checked() {
  local kind=$1
  shift
  local flags=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do
    flags+=("$1")
    shift
  done
  shift
  local output
  output=$(mktemp "$work/logs/$kind.XXXXXX")
  "$@" >"$output" 2>&1
  local status=$?
  if ! python3 "$parse" "$kind" ${flags[@]+"${flags[@]}"} "$output"; then
    [[ $status -ne 0 ]] || status=1
  fi
  [[ $status -eq 0 ]] || echo "exit status $status"
  return "$status"
}

finish() {  # finish: the verdict, after checking what $OUT holds
  local files
  files=$(find "$OUT" -type f | wc -l)
  if ((files > MAX_OUT_FILES)); then
    echo "gpu_check: $OUT holds $files files, more than the $MAX_OUT_FILES that come back:" \
      "$(cd "$OUT" && find . -type f | sort | tr '\n' ' ')" | tee -a "$log"
    failures=$((failures + 1))
  fi
  echo "gpu_check: $failures step(s) failed" | tee -a "$log"
  exit $((failures > 0))
}

# No usable GPU (driver mismatch, CUDA_VISIBLE_DEVICES empty, ...) would make
# every GPU test skip: stop here instead.
echo "=== gpu: CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-(unset)}" | tee -a "$log"
if ! nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1 | tee -a "$log"; then
  echo "gpu_check: nvidia-smi failed: no usable GPU, stopping" | tee -a "$log"
  exit 1
fi
if ! python3 -c 'import torch; assert torch.cuda.is_available(), "torch.cuda.is_available() is False"; print("torch", torch.__version__, "sees", torch.cuda.device_count(), "GPU(s):", torch.cuda.get_device_name(0))' 2>&1 | tee -a "$log"; then
  echo "gpu_check: PyTorch sees no CUDA device: no usable GPU, stopping" | tee -a "$log"
  exit 1
fi

# The modes that run one script alone, its results in $OUT:
#   profile    bench/serve_profile.sh: CPU profiles of the server and the
#              load generator, one file each;
#   transport  bench/transport_probe.sh: where a request's time goes outside
#              the server at concurrency 1;
#   tail       bench/tail_probe.sh: request timelines and thread samples at
#              half the saturated rate;
#   stream     bench/stream_probe.sh: the streamed mlp's ceiling against load
#              generators, connections and server threads;
#   multi-gpu  bench/multi_gpu_probe.sh, on a machine with two GPUs or more:
#              one server on several GPUs and CUDA regions across GPUs, checked
#              against the host executor, and the encoder on one GPU against two;
#   zoo        bench/model_zoo.sh: transformers, torchvision and timm models
#              exported by both torch.onnx exporters, served and compared with
#              PyTorch in float64 and its CUDA graph (ZOO_MODELS narrows it);
#   buckets    bench/bucket_serving.sh: models with a dynamic sequence or image
#              size served at shape buckets over a length mix, against padding
#              to the longest, a bucket per length, PyTorch eager and float64
#              (BUCKET_PARTS narrows it);
#   ensemble   bench/ensemble_pipeline.sh: an ensemble of a preprocessing
#              model and a CNN replayed as one CUDA graph, against its steps
#              and two calls, and PyTorch's CUDA graph of the same stages.
probe=""
case "$steps" in
  profile) probe=serve_profile ;;
  transport) probe=transport_probe ;;
  tail) probe=tail_probe ;;
  stream) probe=stream_probe ;;
  multi-gpu) probe=multi_gpu_probe ;;
  zoo) probe=model_zoo ;;
  buckets) probe=bucket_serving ;;
  ensemble) probe=ensemble_pipeline ;;
esac
if [[ -n "$probe" ]]; then
  run "$probe" bash "bench/$probe.sh" "$bin" "$OUT"
  finish
fi

serve_bench() {  # one results file: the device tool brings back few files
  local dir="$work/serve"
  bash bench/serve_bench.sh "$bin" "$dir"
  local status=$?
  for file in "$dir"/*; do
    echo "===== $(basename "$file")"
    cat "$file"
  done >"$OUT/serve_results.txt"
  rm -rf "$dir"
  return "$status"
}

# `serve-only` runs the serving benchmark without the GPU tests before it,
# when the same bundle's tests ran in an earlier call: the whole serving
# benchmark takes most of the device tool's 600 s for one command.
if [[ "$steps" == "serve-only" ]]; then
  run serve_bench serve_bench
  finish
fi

gpu_count=$(nvidia-smi --list-gpus | grep -c '^GPU')
tests=()
for test in "$bin"/*_test; do
  [[ -x "$test" ]] && tests+=("$test")
done
if [[ ! -x "$bin/server_e2e_test" ]]; then
  echo "=== server_e2e_test: FAILED: not in the bundle ($bundle_tar)" | tee -a "$log"
  failures=$((failures + 1))
fi
if ((${#tests[@]} == 0)); then
  echo "=== gtest: FAILED: no *_test binary in $bin" | tee -a "$log"
  failures=$((failures + 1))
fi
for test in ${tests[@]+"${tests[@]}"}; do
  name=$(basename "$test")
  expect=()
  [[ "$name" == server_e2e_test ]] && expect=(--expect-executor "$GRAPHSERVE_E2E_DEVICE")
  left_out=()  # gtest patterns this machine cannot run
  # Its no-GPU case can only run without one (CI); here it would skip.
  [[ "$name" == cuda_shared_memory_test ]] && left_out+=('*WithoutAGpu*')
  # Tests named ...OnTwoGpus run where two GPUs are (the device tool's
  # two-GPU kinds); on one they would skip, so they are left out, saying so.
  if ((gpu_count < 2)) &&
    [[ -n "$("$test" --gtest_list_tests --gtest_filter='*OnTwoGpus*' | grep '^ ')" ]]; then
    echo "=== $name: its *OnTwoGpus tests left out: $gpu_count GPU(s) here" | tee -a "$log"
    left_out+=('*OnTwoGpus*')
  fi
  filter=()
  if ((${#left_out[@]} > 0)); then
    filter=(--gtest_filter="-$(IFS=:; echo "${left_out[*]}")")
  fi
  run "$name" checked gtest ${expect[@]+"${expect[@]}"} -- "$test" ${filter[@]+"${filter[@]}"}
done


# The four torchvision CNNs (bench/cnn_bench.py): export, prepare at 4 sizes
# x 2 streams, the runtime benchmark at 1,3,8,32 (TF32 on again at 1,8,32);
# $OUT/cnn_bench.md and $OUT/cnn_bench.json.
cnn_bench() {
  local command=(python3 bench/cnn_bench.py --bin-dir "$bin" --work "$work/cnn" --out "$OUT"
    --models "resnet50,inception_v3,mobilenet_v2,efficientnet_b0"
    --streams 2 --prepare-batch-sizes "1,8,16,32"
    --batch-sizes "${CNN_BATCH_SIZES:-1,3,8,32}" --tf32-batch-sizes "${CNN_TF32_BATCH_SIZES:-1,8,32}")
  echo "+ ${command[*]}"
  "${command[@]}"
}

# Where each convolution's plan time goes, and what the tuning budget saves
# and costs against timing every candidate (bench/conv_tuning_probe.cc):
# $OUT/conv_tuning_probe.md.
conv_tuning_probe() {
  timeout 150 "$bin/conv_tuning_probe" >"$OUT/conv_tuning_probe.md"
  local status=$?
  cat "$OUT/conv_tuning_probe.md"
  return "$status"
}

# Issue 9's load targets, on the encoder (bench/export_models.py: 4
# TransformerEncoderLayers, x [B,16,256]): (1) 32 sizes x 4 streams set up in
# under 5 s; (2) set-up grows with the N sizes, not N x M: the same 32 sizes
# prepared with 1 stream and with 4. Set-up is GraphSet's bind, plan
# (algorithm timing included), capture and check, as in the CNN target, and
# judges (1); the whole command's wall time (import, schedule choice, set-up,
# cost table, writing) is the load time that judges (2), and each is printed
# beside the other. One line per target, then both capture reports, in
# $OUT/load_targets.txt.
load_targets() {
  local dir="$work/load"
  local sizes
  sizes=$(seq -s, 1 32)
  mkdir -p "$dir"
  python3 bench/export_models.py --models encoder --out "$dir/models" || return 1
  local status=0 streams start end
  for streams in 4 1; do
    start=$(date +%s%N)
    timeout 100 "$bin/graphserve-capture" prepare --model "$dir/models/encoder.onnx" \
      --out "$dir/repo/encoder_m$streams" --streams "$streams" --batch-sizes "$sizes" || status=1
    end=$(date +%s%N)
    echo $(((end - start) / 1000000)) >"$dir/wall_ms_m$streams"
  done
  python3 - "$dir" "$OUT/load_targets.txt" <<'PY' || status=1
import os, re, sys
sys.path.insert(0, "bench")
import gpu_check_parse

work, out = sys.argv[1], sys.argv[2]
runs = {}
for m in (4, 1):
    path = os.path.join(work, "repo", f"encoder_m{m}", "capture_report.txt")
    text = open(path).read() if os.path.exists(path) else ""
    report = gpu_check_parse.parse_prepare_report(text)
    choice = re.search(r"algorithm choice ([0-9.]+)\)", text)
    schedule = re.search(r"choosing took ([0-9.]+) ms", text)
    wall = open(os.path.join(work, f"wall_ms_m{m}")).read().strip()
    runs[m] = dict(text=text, setup_ms=report["setup_ms"], wall_s=int(wall) / 1000,
                   choice_ms=float(choice.group(1)) if choice else None,
                   schedule_ms=float(schedule.group(1)) if schedule else 0.0)
lines = []
four, one = runs[4], runs[1]
if four["setup_ms"] is None or one["setup_ms"] is None:
    lines.append("load targets: a prepare failed (see gpu_check.log); no verdict")
    ok = False
else:
    met1 = four["setup_ms"] < 5000
    lines.append(
        f"load target 1: encoder 32 sizes x 4 streams: set-up {four['setup_ms'] / 1000:.2f} s "
        f"(target < 5 s: {'met' if met1 else 'MISSED'}); whole prepare {four['wall_s']:.2f} s "
        f"({'also' if four['wall_s'] < 5 else 'not'} under 5 s; schedule choice "
        f"{four['schedule_ms'] / 1000:.2f} s, algorithm choice in set-up "
        f"{(four['choice_ms'] or 0) / 1000:.2f} s)")
    # Load time is the whole prepare. Growth with N x M would be 4x; with N
    # alone it stays near 1x: only each graph's capture and check are per
    # graph, and the set-up ratio, printed beside it, is mostly those. 2x is
    # half way on a log scale.
    ratio = four["wall_s"] / one["wall_s"]
    met2 = ratio < 2.0
    lines.append(
        f"load target 2: encoder 32 sizes, whole prepare with M=1 stream {one['wall_s']:.2f} s, "
        f"with M=4 streams {four['wall_s']:.2f} s: M=4 / M=1 = {ratio:.2f} (N x M growth would "
        f"be 4.00; target < 2: {'met' if met2 else 'MISSED'}); set-up {one['setup_ms'] / 1000:.2f} "
        f"s vs {four['setup_ms'] / 1000:.2f} s ({four['setup_ms'] / one['setup_ms']:.2f}x: 32 vs "
        f"128 graphs captured and checked), algorithm choice in set-up "
        f"{(one['choice_ms'] or 0) / 1000:.2f} s vs {(four['choice_ms'] or 0) / 1000:.2f} s")
    ok = True
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
    for m in (4, 1):
        f.write(f"\n===== encoder, 32 sizes x {m} stream(s): capture_report.txt\n{runs[m]['text']}")
print("\n".join(lines))
sys.exit(0 if ok else 1)
PY
  return "$status"
}

# Conformance on both executors and the example models belong to every mode
# that runs the tests: a GPU run cannot pass without them (issue 27, part 6).
run conformance_cuda checked conformance --min-passed "$CONFORMANCE_MIN_PASSED_CUDA" \
  --min-by-opset "$CONFORMANCE_OPSET_FLOORS_CUDA" -- \
  "$bin/onnx_conformance" --executor=cuda --data "$work/testdata/node"
run conformance_host checked conformance --min-passed "$CONFORMANCE_MIN_PASSED_HOST" \
  --min-by-opset "$CONFORMANCE_OPSET_FLOORS_HOST" -- \
  "$bin/onnx_conformance" --executor=host --data "$work/testdata/node"
# The node tests of the GPU machine's own onnx (opsets past libonnx-testdata's
# 17), written from its definitions by the script CI uses with onnx 1.23.2.
newer="$work/testdata/node-newer"
run node_tests_newer python3 tests/make_onnx_node_tests.py "$newer"
run conformance_newer_cuda checked conformance --min-passed "$CONFORMANCE_NEWER_MIN_PASSED_CUDA" \
  --min-by-opset "$CONFORMANCE_NEWER_OPSET_FLOORS_CUDA" \
  -- "$bin/onnx_conformance" --executor=cuda --data "$newer"
run conformance_newer_host checked conformance --min-passed "$CONFORMANCE_NEWER_MIN_PASSED_HOST" \
  --min-by-opset "$CONFORMANCE_NEWER_OPSET_FLOORS_HOST" \
  -- "$bin/onnx_conformance" --executor=host --data "$newer"
# --device cuda: an error, not the host fallback, when CUDA is not usable.
run examples checked examples --executor cuda --models mlp,dlrm_dense --batch-sizes 1,16,256 \
  --max-rel-err 1e-5 -- "$bin/run_example_models" --device cuda --batch-sizes 1,16,256
if [[ "$steps" == "tests" ]]; then
  finish
fi

# The CNN step first: its set-up and speed targets matter most when time runs
# out.
if [[ "$steps" == "cnn" ]]; then
  run cnn_bench cnn_bench
  run load_targets load_targets
  run conv_tuning_probe conv_tuning_probe
  finish
fi

run serve_bench serve_bench
if [[ "$steps" == "serve" ]]; then
  finish
fi

run launch_overhead "$bin/launch_overhead" --json "$OUT/launch_overhead.json"
# Inputs, outputs and exported models stay in $work/runtime; the tables come back.
runtime="$work/runtime"
runtime_bench() {
  local command=(python3 bench/run_runtime_bench.py --bin "$bin/runtime_bench" --out "$runtime")
  echo "+ ${command[*]}"
  "${command[@]}"
  local status=$?
  cp "$runtime/runtime_bench.md" "$runtime/runtime_bench.json" "$OUT/" || status=1
  return "$status"
}
run runtime_bench runtime_bench

# graphserve-capture prepare on the models the runtime benchmark exported:
# the MLP at 8 sizes x 4 streams (capture-time target), dlrm_dense with sizes
# chosen from a request history, the encoder at 4 sizes x 2 streams. The
# reports and configs land in $OUT/prepare_reports.txt.
repo="$work/repo"
run prepare_mlp "$bin/graphserve-capture" prepare --model "$runtime/models/mlp.onnx" \
  --out "$repo/mlp" --streams 4 --batch-sizes 1,2,4,8,16,32,64,128 --max-batch-size 256
run prepare_dlrm_dense "$bin/graphserve-capture" prepare --model "$runtime/models/dlrm_dense.onnx" \
  --out "$repo/dlrm_dense" --streams 2 --history bench/histories/recsys_requests.txt \
  --num-sizes 6 --max-batch-size 256
run prepare_encoder "$bin/graphserve-capture" prepare --model "$runtime/models/encoder.onnx" \
  --out "$repo/encoder" --streams 2 --batch-sizes 1,4,16,64
# One file (the device tool returns few files): each entry's report and config.
for dir in "$repo"/*/; do
  for file in capture_report.txt config.pbtxt; do
    echo "===== $(basename "$dir")/$file"
    cat "$dir/$file" 2>/dev/null || echo "(missing)"
  done
done >"$OUT/prepare_reports.txt"

run cnn_bench cnn_bench
finish
