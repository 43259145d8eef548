#!/bin/bash
# Call 38: 6c1c722's runtime_bench on architectures the team has not tried
# (issue 27, "test with what users bring"): ELECTRA, MPNet and ALBERT from
# transformers, and timm / torchvision image models, float32, dynamo
# exporter, batch 1 and 8, against PyTorch in float64 and PyTorch's CUDA graph.
B=scratch/slim38.tar.xz  # bin/runtime_bench, lib
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 540 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models electra,mpnet,albert,timm:ghostnet_100,timm:repvgg_a0,timm:mixer_b16_224,timm:beit_base_patch16_224,timm:fastvit_t8,timm:hrnet_w18_small,timm:edgenext_small,tv:efficientnet_v2_s \
  --exporters dynamo --batch-sizes 1,8 > /tmp/zoo.txt 2>&1
echo "zoo unseen rc=$? $(el)" >> $O/summary.txt
tail -16 /tmp/zoo.txt | cut -c1-1200 >> $O/summary.txt
