#!/bin/bash
# Call 83: the bundle of 11fe960 (a chunk of staged rows allocates nothing
# for direct rows; sizes planned from the chunks' demand under dynamic
# batching, Note [Demand rows]): every GPU test; bucket_serving parts
# reselect (a graphserve process serving BERT over HTTP under client
# traffic of 1-4 rows, dynamic batching, re-chosen live by select
# --from-metrics --max-graphs 30 --reload: the sizes now from what its
# chunks could merge) and shm (BERT through graphserve-client via the
# request, system and CUDA shared memory, alone and merged, against float64).
B=scratch/bundle83.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
BUCKET_PARTS=reselect,shm timeout 280 bash bench/bucket_serving.sh $bin $O/buckets > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED|reloaded|expected|metrics:|chosen|current|note:|'exit': [1-9]" /tmp/buckets.txt | grep -v "^\[20\|  shm {" | cut -c1-900 >> $O/summary.txt
cp /tmp/graphserve-buckets/reselect_server.log $O/ 2>/dev/null
echo "done $(el)" >> $O/summary.txt
