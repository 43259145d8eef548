# Sourced by a device call script (bench/results/*/NN_call.sh) after it sets
# B to the bundle (bench/gpu_bundle.sh's tarball): unpacks it as
# gpu_check.sh does, unless gpu_check.sh already did, and sets `bin`,
# LD_LIBRARY_PATH (the bundle's libraries, CUDA's, and the cuDNN and NVRTC of
# the machine's PyTorch) and `el`, which says how long the script has run.
start=$(date +%s)
el() { echo "after $(( $(date +%s) - start )) s"; }
if [[ ! -x /tmp/graphserve-gpu/bin/graphserve-capture ]]; then
  rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf "$B"
fi
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}

# Every GPU test of the bundle (gpu_check.sh tests) within $1 seconds: the
# verdicts into $O/summary.txt, the whole log as $O/tests_gpu_check.log.xz.
gpu_tests() {
  OUT=/tmp/tests timeout "$1" bash bench/gpu_check.sh "$B" tests > /tmp/tests.txt 2>&1
  echo "tests rc=$? $(el)" >> "$O/summary.txt"
  grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-300 >> "$O/summary.txt"
  grep -E "^gtest: " /tmp/tests/gpu_check.log |
    awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> "$O/summary.txt"
  grep -E "^\[  FAILED  \]" /tmp/tests/gpu_check.log | head -20 >> "$O/summary.txt"
  xz -c /tmp/tests/gpu_check.log > "$O/tests_gpu_check.log.xz"
}
