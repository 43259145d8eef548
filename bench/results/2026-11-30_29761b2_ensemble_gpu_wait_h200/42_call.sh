#!/bin/bash
# Call 42: an ensemble (uint8 preprocessing, then ResNet-50) through the
# graphserve of 29761b2, perf_analyzer over gRPC at batch 1 and 8,
# concurrency 1 and 4, with --gpu-wait block and spin in the order block,
# spin, block, spin; the server's CPU over each run.
B=scratch/slim42.tar.xz  # bin/graphserve, lib, pa/ (perf_analyzer 2.51, libcudart.so.12, libb64)
O=$OUT
start=$(date +%s)
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:/tmp/graphserve-gpu/pa:${LD_LIBRARY_PATH:-}
timeout 380 python3 scratch/ensemble_server.py $bin /tmp/graphserve-gpu/pa/perf_analyzer /tmp/ens $O > /tmp/ens.txt 2>&1
echo "ensemble_server rc=$? after $(( $(date +%s)-start )) s" >> $O/summary.txt
tail -30 /tmp/ens.txt | cut -c1-600 >> $O/summary.txt
grep -h "pipeline\|ensemble\|sleep" /tmp/ens/server_*.log 2>/dev/null | head -12 | cut -c1-300 >> $O/summary.txt
