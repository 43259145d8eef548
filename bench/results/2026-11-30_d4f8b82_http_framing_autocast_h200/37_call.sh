#!/bin/bash
# Call 37: 6c1c722: the batch planner with each bucket's own launch costs
# against plans from the largest bucket's costs, side by side on one machine
# (bench/bucket_serving.py --parts planner_costs: BERT-base over the length
# mix, the grid of 5 buckets x 6 batch sizes, costs given in the config, in
# the order own, largest, largest, own).
B=scratch/slim37.tar.xz  # bin/core_bench, lib
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 400 python3 bench/bucket_serving.py --bin $bin --work /tmp/graphserve-buckets --out $O \
  --parts planner_costs > /tmp/bk.txt 2>&1
echo "planner_costs rc=$? $(el)" >> $O/summary.txt
grep -E "^ +->|\\$ " /tmp/bk.txt | cut -c1-700 >> $O/summary.txt
cp /tmp/graphserve-buckets/bert_costs.pbtxt $O/ 2>/dev/null
tail -5 /tmp/bk.txt | cut -c1-300 >> $O/summary.txt
