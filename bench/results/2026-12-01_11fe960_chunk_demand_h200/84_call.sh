#!/bin/bash
# Call 84: graphserve and graphserve-capture of d9775ee. BERT served live to
# 8 HTTP clients of 1-4 rows (dynamic batching), re-chosen by select
# --from-metrics --max-graphs 30 --reload, planned from the requests' rows
# (the default), then the same from a fresh server planned from the chunks'
# demand (--plan-rows chunk-demand): requests/s before, during and after each
# reload, failures, answers against float64.
O=$OUT
nvidia-smi -L > $O/summary.txt
start=$(date +%s)
el() { echo "after $(( $(date +%s) - start )) s"; }
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf scratch/sel84.tar.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib
timeout 330 python3 bench/bucket_serving.py --bin $bin --work /tmp/gsb --out $O/buckets \
  --parts reselect,reselect_demand > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|reloaded|chosen grid|current grid|metrics:|  reselect ->" /tmp/buckets.txt | cut -c1-900 >> $O/summary.txt
cp /tmp/gsb/reselect_*_server.log $O/ 2>/dev/null
echo "done $(el)" >> $O/summary.txt
