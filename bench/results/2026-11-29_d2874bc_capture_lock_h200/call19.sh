#!/bin/bash
# Call 19: Softmax along a strided axis on a block per tile of columns
# (Note [Softmax along a strided axis]): every GPU test of the full bundle
# (op_kernels_test's Softmax cases, the conformance suites on CUDA); then
# CoaT-lite and CaiT again, float32, dynamo, batch 1 and 8.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 280 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: (ok|FAILED)$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
echo "Softmax cases run on CUDA: $(grep -c 'OK \] .*Softmax' /tmp/tests/gpu_check.log)" >> $O/summary.txt
ZOO_EXPORTERS=dynamo ZOO_BATCH_SIZES=1,8 ZOO_MODELS=timm:coat_lite_tiny,timm:cait_xxs24_224 \
  OUT=/tmp/zoo timeout 250 bash bench/gpu_check.sh $B zoo > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
cp /tmp/zoo/model_zoo.md $O/zoo.md 2>/dev/null; cp /tmp/zoo/model_zoo.json $O/zoo.json 2>/dev/null
