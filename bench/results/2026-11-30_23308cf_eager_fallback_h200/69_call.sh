#!/bin/bash
# Call 69: the bundle of the eager-fallback commit: every GPU test (the
# end-to-end suite on CUDA includes ServerWithShapeBuckets
# .RunsWhatNoBucketTakesEagerlyWithinEagerExtents); bucket_serving part eager:
# ResNet-50 at exact sizes 224 and 320 asked for 288 x 288, and BERT at
# buckets up to 256 over the mix whose tail reaches 512, with
# capture.eager_extents, answers against PyTorch in float64.
B=scratch/bundle69.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
BUCKET_PARTS=eager timeout $(( 560 - ($(date +%s)-start) )) bash bench/bucket_serving.sh $bin $O/buckets \
  > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED|eagerly" /tmp/buckets.txt | grep -v "^\[20" | cut -c1-700 >> $O/summary.txt
grep -c "eagerly" /tmp/buckets.txt >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
