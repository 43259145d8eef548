#!/bin/bash
# Call 17: a reloaded step's model gets the ensemble's pipeline built again
# (3674eed): ensemble_pipeline_test, pipeline_graphs_test, server_e2e on CUDA;
# then architectures the team has not run, float32, dynamo exporter, batch
# 1 and 8 (the float32 attention default of the last stop meets new models).
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
for t in ensemble_pipeline_test pipeline_graphs_test stream_capture_test; do
  timeout 100 $bin/$t > /tmp/$t.txt 2>&1; echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/$t.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
  grep -B3 -A10 "Failure" /tmp/$t.txt | head -40 >> $O/summary.txt
done
grep -E "built again|step by step|ensemble '" /tmp/ensemble_pipeline_test.txt | cut -c1-300 | head -10 >> $O/summary.txt
GRAPHSERVE_E2E_DEVICE=cuda timeout 150 $bin/server_e2e_test > /tmp/e2e.txt 2>&1; echo "server_e2e_test rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/e2e.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
grep -B3 -A10 "Failure" /tmp/e2e.txt | head -40 >> $O/summary.txt
ZOO_EXPORTERS=dynamo ZOO_BATCH_SIZES=1,8 \
ZOO_MODELS=tv:vit_b_32,timm:pvt_v2_b0,timm:twins_svt_small,timm:coat_lite_tiny,timm:xcit_tiny_12_p16_224,timm:efficientformer_l1,tv:regnet_y_400mf,timm:cait_xxs24_224 \
  OUT=/tmp/zoo timeout 400 bash bench/gpu_check.sh $B zoo > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
cp /tmp/zoo/model_zoo.md $O/zoo.md 2>/dev/null; cp /tmp/zoo/model_zoo.json $O/zoo.json 2>/dev/null
tail -30 /tmp/zoo.txt | cut -c1-300 > $O/zoo_tail.txt
ls /tmp/zoo >> $O/zoo_tail.txt
