#!/bin/bash
# Call 62: the bundle of 530947a (Note [Repeated nodes]: a node computing
# what an emitted node computes is not emitted again; a one-input Concat is
# its input): every GPU test; TorchScript .half() transformers served in
# fp16 at batch 1, 8, 64; the fp32 leftovers of issue 28 (bench:encoder,
# bench:mlp, bench:dlrm_dense) at batch 1, 16, 64 with weightless copies of
# the encoder's exports.
B=scratch/bundle62.tar.xz
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
run() {  # precision exporters models batches
  left=$(( 420 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$1 \
    --models $3 --exporters $2 --batch-sizes $4 --precision $1 > /tmp/zoo_$1.txt 2>&1
  echo "zoo $1 $2 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1.txt | cut -c1-900 >> $O/summary.txt
}
run fp16-half-config ts bert,distilbert,gpt2 1,8,64
run fp32 ts,dynamo bench:encoder,bench:mlp,bench:dlrm_dense 1,16,64
for f in /tmp/graphserve-zoo/bench_encoder_ts_fp32.onnx /tmp/graphserve-zoo/bench_encoder_dynamo_fp32.onnx; do
  python3 bench/onnx_structure.py strip $f $O/$(basename $f .onnx)_stripped.onnx >> $O/summary.txt 2>&1
done
echo "done $(el)" >> $O/summary.txt
