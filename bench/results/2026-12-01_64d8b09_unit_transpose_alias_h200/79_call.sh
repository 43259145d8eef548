#!/bin/bash
# Call 79: cuda_executor_test alone at HEAD (its capture steps moved into
# one helper, CaptureEnqueue, after call 78).
B=scratch/cet79.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
$bin/cuda_executor_test > /tmp/cet.txt 2>&1
echo "cuda_executor_test rc=$? $(el)" >> $O/summary.txt
grep -E "^\[  PASSED|^\[  FAILED|^\[  SKIPPED|tests ran" /tmp/cet.txt >> $O/summary.txt
grep -E "OK \] .*(Capture|View|Swapped)" /tmp/cet.txt >> $O/summary.txt
