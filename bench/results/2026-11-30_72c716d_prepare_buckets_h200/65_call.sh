#!/bin/bash
# Call 65: the bundle of the prepare-as-the-server-loads commit: every GPU
# test; bucket_serving's parts bert (the hand-written grid config) and
# prepared (BERT prepared with --buckets and --pad, GPT-2 prepared with
# --max-batch-size 0), each served by core_bench over the length mix and
# checked against PyTorch in float64.
B=scratch/bundle65.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
t0=$(date +%s)
OUT=/tmp/tests timeout 300 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? after $(( $(date +%s)-t0 )) s" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-300 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
grep -E "^\[  FAILED  \]" /tmp/tests/gpu_check.log | head -20 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
source bench/device_env.sh
BUCKET_PARTS=bert,prepared timeout $(( 560 - ($(date +%s)-t0) )) \
  bash bench/bucket_serving.sh $bin $O/buckets > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED|error" /tmp/buckets.txt | cut -c1-600 >> $O/summary.txt
cp /tmp/graphserve-buckets/repo_prepared/bert/capture_report.txt $O/bert_prepared_report.txt 2>/dev/null
cp /tmp/graphserve-buckets/repo_prepared/bert/config.pbtxt $O/bert_prepared_config.pbtxt 2>/dev/null
cp /tmp/graphserve-buckets/repo_prepared_nobatch/gpt2/capture_report.txt $O/gpt2_nobatch_report.txt 2>/dev/null
cp /tmp/graphserve-buckets/repo_prepared_nobatch/gpt2/config.pbtxt $O/gpt2_nobatch_config.pbtxt 2>/dev/null
xz -c /tmp/buckets.txt > $O/buckets_log.txt.xz
echo "done $(el)" >> $O/summary.txt
