#!/bin/bash
# Call 81: pageable rows padded by the device (packed in staging, placed by
# pitched copies; RowRoute::kPacked) against padded by the host into
# staging (2006c7b), same run: graph_set_test and graph_set_runner_test of
# the new code; then bucket_serving part bert (BERT at the 5-bucket grid,
# saturated over the length mix, answers against float64) with the old and
# the new core_bench, in the order old new new old.
O=$OUT
nvidia-smi -L > $O/summary.txt
start=$(date +%s)
el() { echo "after $(( $(date +%s) - start )) s"; }
for side in old new; do mkdir -p /tmp/$side; done
tar -C /tmp/old -xJf scratch/cb_host_pad.tar.xz
tar -C /tmp/new -xJf scratch/cb_device_pad.tar.xz
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
base=/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib
for t in graph_set_runner_test graph_set_test; do
  LD_LIBRARY_PATH=/tmp/new/graphserve-gpu/lib:$base /tmp/new/graphserve-gpu/bin/$t > /tmp/$t.txt 2>&1
  echo "$t rc=$? $(el)" >> $O/summary.txt
  grep -E "^\[  (PASSED|FAILED)|Failure" /tmp/$t.txt | head -10 >> $O/summary.txt
done
i=0
for side in old new new old; do
  i=$((i+1))
  LD_LIBRARY_PATH=/tmp/$side/graphserve-gpu/lib:$base timeout 110 python3 bench/bucket_serving.py \
    --bin /tmp/$side/graphserve-gpu/bin --work /tmp/gsb --out /tmp/gsb_out_$i --parts bert \
    > /tmp/gsb_$i.txt 2>&1
  echo "bert run $i ($side) rc=$? $(el)" >> $O/summary.txt
  grep -E "  ->" /tmp/gsb_$i.txt | sed -E "s/'load_phases': '[^']*', //" | cut -c1-700 >> $O/summary.txt
  cp /tmp/gsb_out_$i/bucket_serving.json $O/bert_${i}_$side.json 2>/dev/null
done
echo "done $(el)" >> $O/summary.txt
