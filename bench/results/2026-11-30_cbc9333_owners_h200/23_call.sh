#!/bin/bash
# Call 23: this stop's GPU code and tests (pipelines that sleep under
# --gpu-wait block, WithCapturesHeldOff in shared_memory.cc, shared-memory
# owners end to end on the CUDA executor): every GPU test of the full bundle;
# then the zoo's named models again, float32, dynamo, batch 1 and 8, the
# first run of them after the softmax (7d213ec) and transpose (2e1f007)
# changes of the last stop.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 280 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: (ok|FAILED)$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
for t in pipeline_graphs_test ensemble_pipeline_test shared_memory_e2e_test stream_capture_test shared_memory_test; do
  echo "$t: $(grep -cE '^\[       OK \] ' <(awk "/=== $t/,/^=== [a-z_]*: (ok|FAILED)/" /tmp/tests/gpu_check.log)) OK; $(awk "/=== $t/,/^=== [a-z_]*: (ok|FAILED)/" /tmp/tests/gpu_check.log | grep -E '^\[  (PASSED|FAILED|SKIPPED) ' | tr '\n' ' ')" >> $O/summary.txt
done
grep -E "OK \] .*(Sleep|Owner|sleep)" /tmp/tests/gpu_check.log >> $O/summary.txt
ZOO_EXPORTERS=dynamo ZOO_BATCH_SIZES=1,8 OUT=/tmp/zoo timeout 290 bash bench/gpu_check.sh $B zoo > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
cp /tmp/zoo/model_zoo.md $O/zoo.md 2>/dev/null; cp /tmp/zoo/model_zoo.json $O/zoo.json 2>/dev/null
tail -30 /tmp/zoo.txt | cut -c1-300 > $O/zoo_tail.txt
