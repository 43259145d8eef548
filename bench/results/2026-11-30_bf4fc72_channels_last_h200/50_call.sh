#!/bin/bash
# Call 50: ResNet-50 in float16 kernel by kernel (ours under ncu, PyTorch's
# graph under torch.profiler) at batch 1 and 8: how much of our time is
# layout conversion around cuDNN's NCHW convolutions (the NHWC question).
B=scratch/slim49.tar.xz
O=$OUT
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
timeout 500 bash bench/kernel_profile.sh $bin $O/profile resnet50 fp16 > $O/summary.txt 2>&1
echo "rc=$?" >> $O/summary.txt
