#!/bin/bash
# Call 24: does the server's RSS grow per model reload on the CUDA executor?
# (The soak of call 20 saw RSS rise in steps at 3 of 7 reloads.) The demo
# repository on GPU 0; mlp reloaded 150 times through the HTTP repository
# API, three inferences after each; RSS and GPU memory every 10 reloads.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > $O/rss.txt
$bin/make_demo_repository --out /tmp/repo > /dev/null
$bin/graphserve --model-repository /tmp/repo --model-control-mode explicit --load-model '*' \
  --grpc-port 18001 --http-port 18000 --allow-metrics false > /tmp/server.log 2>&1 &
pid=$!
for i in $(seq 1 120); do curl -sf localhost:18000/v2/health/ready >/dev/null && break; sleep 0.5; done
python3 -c 'import json; print(json.dumps({"inputs":[{"name":"x","shape":[1,512],"datatype":"FP32","data":[0.1]*512}]}))' > /tmp/body.json
rss() { awk '/VmRSS/{print $2}' /proc/$pid/status; }
gpu() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | awk -v p=$pid -F', ' '$1==p{print $2}'; }
echo "start rss_kib=$(rss) gpu=$(gpu)" >> $O/rss.txt
fails=0
for round in $(seq 1 15); do
  t0=$(date +%s.%N)
  for k in $(seq 1 10); do
    curl -sf -X POST localhost:18000/v2/repository/models/mlp/load -d '{}' >/dev/null || fails=$((fails+1))
    for j in 1 2 3; do curl -sf -X POST localhost:18000/v2/models/mlp/infer -H 'Content-Type: application/json' --data-binary @/tmp/body.json >/dev/null || fails=$((fails+1)); done
  done
  sleep 1
  echo "after $((round*10)) reloads rss_kib=$(rss) gpu=$(gpu) fails=$fails round_s=$(echo "$(date +%s.%N) - $t0" | bc)" >> $O/rss.txt
done
kill $pid; wait $pid
grep -cE "retired" /tmp/server.log >> $O/rss.txt
tail -5 /tmp/server.log | cut -c1-300 >> $O/rss.txt
