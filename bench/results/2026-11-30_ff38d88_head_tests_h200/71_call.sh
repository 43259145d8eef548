#!/bin/bash
# Call 71: the bundle of ff38d88 (HEAD at the stop: an eager request takes its
# place in preserve_ordering when accepted): every GPU test.
B=scratch/bundle71.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
echo "done $(el)" >> $O/summary.txt
