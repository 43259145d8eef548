#!/bin/bash
# Call 56: the bundle of HEAD (binding's folding bound, libonnx's checker
# before its shape inference, passed-string type check): every GPU test
# (gpu_check.sh tests), then real exports through the reordered import:
# TorchScript .half() transformers (the mixed-precision LayerNorm files that
# the lenient typing run rewrites) and dynamo exports, float16, batch 1 and 8.
B=scratch/bundle56.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 300 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-300 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
grep -iE "passed by opset|[0-9]+ passed, [0-9]+ failed" /tmp/tests/gpu_check.log | head -8 >> $O/summary.txt
grep -E "^\[  FAILED  \]" /tmp/tests/gpu_check.log | head -20 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for exporter in ts dynamo; do
  left=$(( 570 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$exporter \
    --models bert,distilbert,gpt2,vit --exporters $exporter --batch-sizes 1,8 --precision fp16 > /tmp/zoo.txt 2>&1
  echo "zoo fp16 $exporter rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo.txt | cut -c1-800 >> $O/summary.txt
done
