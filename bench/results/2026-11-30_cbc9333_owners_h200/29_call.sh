#!/bin/bash
# Call 29: the soak (bench/soak.py) on 2fdb1a8, pooled cuDNN handles: the
# demo repository on the CUDA executor, gRPC, HTTP, stream and system
# shared-memory clients, 5% malformed, a reload a minute; 8.5 minutes, as
# long as one device call allows. The server also carries the mallinfo2
# probe (scratch/mallprobe), so that RSS can be told from malloc's bytes in use.
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf scratch/soak.tar.xz
python3 -m pip install --no-deps --no-index --quiet --target /tmp/pylib scratch/wheels/*.whl > $O/pip.txt 2>&1
echo "pip rc=$? $(el)" >> $O/summary.txt
export PYTHONPATH=/tmp/pylib
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
rm -f /tmp/mp.txt*
export MALLPROBE_OUT=/tmp/mp.txt MALLPROBE_ONLY=graphserve LD_PRELOAD=$PWD/scratch/mallprobe/libmallprobe.so
timeout 555 python3 bench/soak.py --server $bin/graphserve --make-repository $bin/make_demo_repository \
  --minutes 8.5 --device cuda:0 --threads 2 --out $O/soak > $O/soak.log 2>&1
echo "soak rc=$? $(el)" >> $O/summary.txt
unset LD_PRELOAD
tail -5 $O/soak.log | cut -c1-600 >> $O/summary.txt
awk 'NR % 30 == 1' /tmp/mp.txt > $O/mallinfo_30s.txt
