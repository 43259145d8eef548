#!/bin/bash
# Call 32: the planner speaks graph keys (each bucket planned with its own
# costs, every key timed at load): every GPU test of the bundle; then the
# bucket benchmark's BERT grid (the "after" of call 31's run on 754523a) and
# BERT-base at 4 streams (load time against < 10 s).
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 280 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
grep -E "PadsRequestsIntoBucketsWhereExactAndMergesLengths" /tmp/tests/gpu_check.log | head -4 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
BUCKET_PARTS=bert,streams4 OUT=/tmp/bk timeout 280 bash bench/gpu_check.sh $B buckets > /tmp/bk.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
cp /tmp/bk/bucket_serving.json $O/ 2>/dev/null
grep -E "loaded in" /tmp/bk.txt | cut -c1-600 > $O/load_log.txt
grep -vE "loaded in|progress" /tmp/bk.txt | tail -40 | cut -c1-300 >> $O/summary.txt
