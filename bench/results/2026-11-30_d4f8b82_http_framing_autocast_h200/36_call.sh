#!/bin/bash
# Call 36: 853e5ae+ (a connection ends after an answer given before its
# request's head was parsed; BWS after a chunk size; the keys check at load):
# server_e2e_test whole on CUDA; bench/attack_probe.py again; then precision
# auto against PyTorch's own automatic mixed precision: the zoo at
# auto-config with --autocast-anchor (PyTorch's CUDA graph of the float32
# model under torch.autocast float16), dynamo exporter, batch 1 and 8.
B=scratch/slim36.tar.xz  # bin/{graphserve,make_demo_repository,server_e2e_test,runtime_bench}, lib
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
GRAPHSERVE_E2E_DEVICE=cuda timeout 240 $bin/server_e2e_test > /tmp/e2e.txt 2>&1
echo "server_e2e_test (cuda, whole) rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/e2e.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
grep -B3 -A12 "Failure" /tmp/e2e.txt | head -40 >> $O/summary.txt
python3 -m pip install --no-deps --no-index --quiet --target /tmp/pylib scratch/wheels/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/pylib timeout 150 python3 bench/attack_probe.py --server $bin/graphserve \
  --make-repository $bin/make_demo_repository --device cuda:0 --out $O/attack > /tmp/attack.txt 2>&1
echo "attack_probe rc=$? $(el)" >> $O/summary.txt
tail -12 /tmp/attack.txt | cut -c1-400 >> $O/summary.txt
timeout 330 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models bert,distilbert,vit,resnet50,efficientnet_b0 --exporters dynamo --batch-sizes 1,8 \
  --precision auto-config --autocast-anchor > /tmp/zoo.txt 2>&1
echo "zoo auto-config vs autocast rc=$? $(el)" >> $O/summary.txt
tail -10 /tmp/zoo.txt | cut -c1-1500 >> $O/summary.txt
