#!/bin/bash
# Call 46: the bundle of 8891b26 (GridSample, ConvTranspose, the NMS
# refusal; op_kernels_test of 45b2ce6): every GPU test (gpu_check.sh tests),
# then DPT and Depth Anything (ConvTranspose in their reassemble stages) and
# RT-DETR again (its float32 error beside PyTorch's own, and eager timing:
# PyTorch cannot capture it), dynamo exporter, float32, batch 1 and 8.
B=scratch/bundle46.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 300 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-300 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
grep -E "GridSample" /tmp/tests/gpu_check.log | grep -cE "^\[       OK" | sed 's/^/GridSample op kernel cases OK: /' >> $O/summary.txt
grep -E "GridSample|gridsample|convtranspose" /tmp/tests/gpu_check.log | grep -E "FAILED|SKIPPED" | head -8 >> $O/summary.txt
grep -iE "passed by opset|[0-9]+ passed, [0-9]+ failed" /tmp/tests/gpu_check.log | head -8 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
left=$(( 565 - ($(date +%s)-start) ))
timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models dpt,depth_anything,rt_detr --exporters dynamo --batch-sizes 1,8 > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^{' /tmp/zoo.txt | cut -c1-1000 >> $O/summary.txt
