#!/bin/bash
# Call 49: precision auto with autocast's promotion (the residual stream in
# float32): the zoo at auto-config with --autocast-anchor, dynamo exporter,
# batch 1 and 8, as call 36 ran it before the change.
B=scratch/slim49.tar.xz  # bin/runtime_bench, lib
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 500 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models bert,distilbert,vit,resnet50,efficientnet_b0 --exporters dynamo --batch-sizes 1,8 \
  --precision auto-config --autocast-anchor > /tmp/zoo.txt 2>&1
echo "zoo auto-config vs autocast rc=$? $(el)" >> $O/summary.txt
grep '^{' /tmp/zoo.txt | cut -c1-1500 >> $O/summary.txt
tail -8 /tmp/zoo.txt | cut -c1-1500 >> $O/summary.txt
grep -h "precision auto keeps" $O/zoo/model_zoo.log | cut -c1-400 >> $O/summary.txt
