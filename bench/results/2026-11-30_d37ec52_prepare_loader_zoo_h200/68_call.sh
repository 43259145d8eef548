#!/bin/bash
# Call 68: bucket_serving parts fine_grid (16 buckets, at 6 sizes x 2 streams and
# at per_length's 3 sizes x 1 stream) and per_length, side by side, on the
# bundle of call 66.
B=scratch/bundle66.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
BUCKET_PARTS=fine_grid,per_length timeout 540 bash bench/bucket_serving.sh $bin $O/buckets \
  > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED" /tmp/buckets.txt | grep -v "^\[" | cut -c1-700 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
