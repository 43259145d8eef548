#!/bin/bash
# Call 93 (the test after its set-up moved to server/masked_model_testing.h): served_model_cuda_test (a bucketed model's tensors in a CUDA
# region, at a length a bucket takes and at one only the eager fallback
# takes; last stop's "noticed": the eager path's re-validation had no GPU
# test).
B=scratch/slim93.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
source bench/device_env.sh
timeout 120 $bin/served_model_cuda_test > $O/served_model_cuda_test.txt 2>&1
echo "served_model_cuda_test rc=$? $(el)" >> $O/summary.txt
grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]|Failure|eager|bucket" $O/served_model_cuda_test.txt | cut -c1-300 | head -20 >> $O/summary.txt
