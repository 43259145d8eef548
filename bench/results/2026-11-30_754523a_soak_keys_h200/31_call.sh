#!/bin/bash
# Call 31: collects the soaks call 30 started (old 2fdb1a8 / new 754523a,
# side by side on GPU 0), once both have finished; then every GPU test of
# the bundle of 754523a.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
ps -eo pid,sid,etimes,args | grep -E "soak.py|graphserve " | grep -v grep | cut -c1-160 >> $O/summary.txt
while pgrep -f gs/bench/soak.py > /dev/null && [ $(( $(date +%s)-start )) -lt 300 ]; do sleep 5; done
echo "soaks done $(el)" >> $O/summary.txt
for v in old new; do
  cp /tmp/out_$v/soak.json $O/soak_$v.json 2>/dev/null
  echo "== $v: $(tail -1 /tmp/soak_$v.log | cut -c1-300)" >> $O/summary.txt
  grep -E "^soak: " /tmp/soak_$v.log | tail -2 | cut -c1-300 >> $O/summary.txt
  awk 'NR % 30 == 1' /tmp/mp_$v.txt* > /tmp/mallinfo_$v.txt 2>/dev/null
done
cat /tmp/mallinfo_old.txt <(echo ==== new) /tmp/mallinfo_new.txt > $O/mallinfo_30s.txt
nvidia-smi --query-gpu=memory.used --format=csv >> $O/summary.txt
OUT=/tmp/tests timeout 280 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
# The bucket benchmark's BERT part on 754523a: the grid's throughput with
# every bucket planned by the largest bucket's costs (the "before" of the
# per-bucket planner).
BUCKET_PARTS=bert OUT=/tmp/bk timeout 200 bash bench/gpu_check.sh $B buckets > /tmp/bk.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
cp /tmp/bk/bucket_serving.json $O/ 2>/dev/null
grep -E "req/s|requests/s|grid|pad512|exact|loaded in" /tmp/bk.txt | cut -c1-300 | tail -20 >> $O/summary.txt
