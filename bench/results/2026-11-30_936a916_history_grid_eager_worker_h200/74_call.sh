#!/bin/bash
# Call 74: the bundle of call 72 (936a916; the bench script of the commit
# after it): bucket_serving part reselect (a graphserve process serving BERT
# at the 5-bucket grid over HTTP under client traffic of 1-4 rows over the
# length mix, re-chosen live by `select --from-metrics --max-graphs 30
# --reload`: the grids, failures before, during and after, answers against
# float64), and parts streams4 and grid8x8 (load times).
B=scratch/bundle72.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
BUCKET_PARTS=reselect,streams4,grid8x8 timeout 500 bash bench/bucket_serving.sh $bin $O/buckets \
  > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED|grid|reloaded|expected|metrics:" /tmp/buckets.txt | grep -v "^\[20" | cut -c1-900 >> $O/summary.txt
cp /tmp/graphserve-buckets/reselect_server.log $O/ 2>/dev/null
echo "done $(el)" >> $O/summary.txt
