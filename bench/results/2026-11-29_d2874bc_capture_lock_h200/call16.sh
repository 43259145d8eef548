#!/bin/bash
# Call 16: the capture lock with two kinds of holder, the deleters and shared
# memory holding captures off (d2874bc): every GPU test of the full bundle;
# BERT-base at 4 streams, loaded three times (load time against < 10 s).
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 280 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: (ok|FAILED)$|^gpu_check:" /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
BUCKET_PARTS=streams4 OUT=/tmp/bk timeout 150 bash bench/gpu_check.sh $B buckets > /tmp/bk.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\[  (PASSED|FAILED) |^\[==========\]" /tmp/bk.txt >> $O/summary.txt
cp /tmp/bk/bucket_serving.json $O/ 2>/dev/null
export LD_LIBRARY_PATH=/tmp/graphserve-gpu/lib:${LD_LIBRARY_PATH:-}
for i in 2 3; do
  timeout 40 /tmp/graphserve-gpu/bin/core_bench --model-repository /tmp/graphserve-buckets/repo_streams4 --model bert \
    --outstanding 4 --threads 1 --milliseconds 200 --lengths lognormal:24,0.9,512,8 > /tmp/load$i.txt 2>&1
  echo "load $i rc=$? $(el)" >> $O/summary.txt
  grep -v "progress" /tmp/load$i.txt | grep "loaded in\|schedul\|rror" | cut -c1-3000 | head -20 >> $O/load_log.txt
done
