#!/bin/bash
# Call 73: the same bundle as call 72 (936a916): bucket_serving parts
# history (BERT prepared with `--batch-sizes ... --history --max-graphs 96`:
# the buckets the planner chooses from the mix's length history, for the
# sizes given, 16 buckets x 6 sizes x 2 streams and 32 x 3 x 1), per_length
# (one bucket per length, 64 x 3 x 1) and fine_grid, one run: throughput,
# p50/p99, padded positions and answers against float64.
B=scratch/bundle72.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
BUCKET_PARTS=history,per_length,fine_grid timeout 570 bash bench/bucket_serving.sh $bin $O/buckets \
  > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED" /tmp/buckets.txt | grep -v "^\[20" | cut -c1-700 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
