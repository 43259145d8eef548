#!/bin/bash
# Call 28: pooled cuDNN handles (2fdb1a8). Every GPU test of the bundle;
# then call 24's reload loop again: the demo repository on GPU 0, mlp
# reloaded 150 times through the HTTP repository API, three inferences after
# each; RSS, malloc's bytes in use (LD_PRELOAD probe) and GPU memory every 10.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
OUT=/tmp/tests timeout 280 bash bench/gpu_check.sh $B tests > /tmp/tests.txt 2>&1
echo "tests rc=$? $(el)" >> $O/summary.txt
grep -E "^=== .*: FAILED$|^gpu_check:|^conformance: " /tmp/tests.txt | cut -c1-200 >> $O/summary.txt
grep -E "^gtest: " /tmp/tests/gpu_check.log | awk '{ran+=$2; skipped+=$6} END {print "gtest: " ran " ran, " skipped " skipped over all binaries"}' >> $O/summary.txt
xz -c /tmp/tests/gpu_check.log > $O/tests_gpu_check.log.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
rm -rf /tmp/repo; $bin/make_demo_repository --out /tmp/repo > /dev/null
rm -f /tmp/mp.txt*
MALLPROBE_OUT=/tmp/mp.txt LD_PRELOAD=$PWD/scratch/mallprobe/libmallprobe.so \
  $bin/graphserve --model-repository /tmp/repo --model-control-mode explicit --load-model '*' \
  --grpc-port 18001 --http-port 18000 --allow-metrics false > /tmp/server.log 2>&1 &
pid=$!
for i in $(seq 1 120); do curl -sf localhost:18000/v2/health/ready >/dev/null && break; sleep 0.5; done
python3 -c 'import json; print(json.dumps({"inputs":[{"name":"x","shape":[1,512],"datatype":"FP32","data":[0.1]*512}]}))' > /tmp/body.json
gpu() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | awk -v p=$pid -F', ' '$1==p{print $2}'; }
state() { echo "$1: rss_kib=$(awk '/VmRSS/{print $2}' /proc/$pid/status) gpu=$(gpu) $(tail -1 /tmp/mp.txt | cut -d' ' -f2-3)" >> $O/rss.txt; }
fails=0
state start
for round in $(seq 1 15); do
  for k in $(seq 1 10); do
    curl -sf -X POST localhost:18000/v2/repository/models/mlp/load -d '{}' >/dev/null || fails=$((fails+1))
    for j in 1 2 3; do curl -sf -X POST localhost:18000/v2/models/mlp/infer -H 'Content-Type: application/json' --data-binary @/tmp/body.json >/dev/null || fails=$((fails+1)); done
  done
  sleep 1.5
  state "after $((round*10)) reloads (fails $fails)"
done
kill $pid; wait $pid
echo "reload loop $(el)" >> $O/summary.txt
