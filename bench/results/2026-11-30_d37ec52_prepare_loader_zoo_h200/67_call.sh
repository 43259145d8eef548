#!/bin/bash
# Call 67: bucket_serving parts bert (the 5-bucket grid), fine_grid (the 16
# buckets with the fewest padded positions for the mix) and per_length (one
# bucket per length), side by side, on the bundle of call 66 (fine_grid then ran
# its 2-stream grid only).
B=scratch/bundle66.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
BUCKET_PARTS=bert,fine_grid,per_length timeout 540 bash bench/bucket_serving.sh $bin $O/buckets \
  > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED" /tmp/buckets.txt | grep -v "^\[" | cut -c1-700 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
