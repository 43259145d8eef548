#!/bin/bash
# Call 22: thin transposes through the strided map (the commit after
# 7d213ec): op_kernels_test and cuda_executor_test, the conformance suite on
# CUDA (floor 607); CaiT and CoaT-lite again, float32, dynamo, batch 1
# and 8.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
for t in op_kernels_test cuda_executor_test; do
  timeout 100 $bin/$t > /tmp/$t.txt 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -B3 -A10 "Failure" /tmp/$t.txt | head -40 >> $O/summary.txt
done
timeout 60 $bin/onnx_conformance --executor=cuda --data /tmp/graphserve-gpu/testdata/node > /tmp/conf.txt 2>&1
echo "conformance cuda rc=$? $(grep -E 'passed' /tmp/conf.txt | tail -1) $(el)" >> $O/summary.txt
ZOO_EXPORTERS=dynamo ZOO_BATCH_SIZES=1,8 ZOO_MODELS=timm:cait_xxs24_224,timm:coat_lite_tiny \
  OUT=/tmp/zoo timeout 150 bash bench/gpu_check.sh $B zoo > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
cp /tmp/zoo/model_zoo.md $O/zoo.md 2>/dev/null; cp /tmp/zoo/model_zoo.json $O/zoo.json 2>/dev/null
