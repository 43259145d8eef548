#!/bin/bash
# Call 40: the bundle of this commit (the GEMM fix for a transposed A with a
# 2-D B): every GPU test (gpu_check.sh tests, with the new
# CudaExecutorTokenMixingTest), then timm's mixer_b16_224 through the zoo,
# float32 and fp16-config, batch 1 and 8 (refused at batch 8 in call 38).
B=scratch/bundle40.tar.xz  # the bundle of 29761b2, without the benchmark-only binaries (core_bench, replay_bench, ...)
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 300 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
grep -E "TokenMixing" /tmp/tests/gpu_check.log | grep -E "OK|FAILED" | head -8 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for precision in fp32 fp16-config; do
  timeout 120 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$precision \
    --models timm:mixer_b16_224 --exporters dynamo --batch-sizes 1,8 --precision $precision > /tmp/zoo_$precision.txt 2>&1
  echo "zoo mixer $precision rc=$? $(el)" >> $O/summary.txt
  tail -1 /tmp/zoo_$precision.txt | cut -c1-1200 >> $O/summary.txt
done
