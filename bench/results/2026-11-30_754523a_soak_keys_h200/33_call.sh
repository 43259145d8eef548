#!/bin/bash
# Call 33: 5b72f6a (18a8ce6: a warm-up launch over the measuring budget is the cost
# sample): the shape-bucket end-to-end tests on CUDA (a cost per graph);
# BERT-base at 4 streams, loaded three times (< 10 s); then
# bench/attack_probe.py, attacks written by a tester who had not read the
# team's hostile tests, against the demo repository on GPU 0.
B=scratch/slim33.tar.xz  # graphserve, make_demo_repository, core_bench, server_e2e_test, lib
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
GRAPHSERVE_E2E_DEVICE=cuda timeout 120 $bin/server_e2e_test --gtest_filter='*ShapeBuckets*:*ShapeDims*:*WithoutBatchDim*:*TritonConfig*' > /tmp/e2e.txt 2>&1
echo "server_e2e_test (cuda, shapes) rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/e2e.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
grep -B3 -A12 "Failure" /tmp/e2e.txt | head -40 >> $O/summary.txt
timeout 200 python3 bench/bucket_serving.py --bin $bin --work /tmp/graphserve-buckets --out /tmp/bk \
  --parts streams4 > /tmp/bk.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
cp /tmp/bk/bucket_serving.json $O/ 2>/dev/null
for i in 2 3; do
  timeout 40 $bin/core_bench --model-repository /tmp/graphserve-buckets/repo_streams4 --model bert \
    --outstanding 4 --threads 1 --milliseconds 200 --lengths lognormal:24,0.9,512,8 > /tmp/load$i.txt 2>&1
  echo "load $i rc=$? $(el)" >> $O/summary.txt
  grep "model 'bert' loaded in" /tmp/load$i.txt | cut -c1-600 >> $O/summary.txt
done
python3 -m pip install --no-deps --no-index --quiet --target /tmp/pylib scratch/wheels/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/pylib timeout 200 python3 bench/attack_probe.py --server $bin/graphserve \
  --make-repository $bin/make_demo_repository --device cuda:0 --out $O/attack > /tmp/attack.txt 2>&1
echo "attack_probe rc=$? $(el)" >> $O/summary.txt
tail -40 /tmp/attack.txt | cut -c1-300 >> $O/summary.txt
