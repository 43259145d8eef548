#!/bin/bash
# Call 60: the bundle of f626f6f (a Cast to its own type is no node; the
# float32-GEMMs notice; schedule --precision): every GPU test; TorchScript
# .half() transformers served with precision fp16 (the first attention now
# fused) at batch 1, 8, 64; the notice in runtime_bench's log for the file
# as written.
B=scratch/bundle60.tar.xz  # the GPU bundle
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 300 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-300 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
grep -E "^\[  FAILED  \]" /tmp/tests/gpu_check.log | head -20 >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
run() {  # precision exporter models batches
  left=$(( 560 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$1_$2 \
    --models $3 --exporters $2 --batch-sizes $4 --precision $1 > /tmp/zoo_$1_$2.txt 2>&1
  echo "zoo $1 $2 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1_$2.txt | cut -c1-900 >> $O/summary.txt
}
run fp16-half-config ts bert,distilbert,gpt2,vit 1,8,64
run fp16 dynamo bert,distilbert,gpt2 1,8,64
run fp16 ts bert 1
grep -h "compute in float32 as written" /tmp/graphserve-zoo/*.log $O/zoo_fp16_ts/*.log 2>/dev/null | head -3 | cut -c1-500 >> $O/summary.txt
python3 bench/onnx_structure.py strip /tmp/graphserve-zoo/gpt2_ts_fp16-half-config.onnx $O/gpt2_ts_half_stripped.onnx >> $O/summary.txt 2>&1
echo "done $(el)" >> $O/summary.txt
