#!/bin/bash
# Call 30: the first part of a ten-minute soak (bench/soak.py), two servers
# side by side on GPU 0, each saturated by its own soak: "new" is 754523a
# (the retirer trims the host heap), "old" is 2fdb1a8 (no trim; the server
# otherwise the same). Both carry the mallinfo2 probe. The soaks run in
# sessions of their own (setsid), so they outlive this call; call 31
# collects them. Copies of their reports so far come back from this call.
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv >> $O/summary.txt
for v in old new; do
  rm -rf /tmp/soak_$v && mkdir -p /tmp/soak_$v && tar -C /tmp/soak_$v -xJf scratch/soak_$v.tar.xz
done
python3 -m pip install --no-deps --no-index --quiet --target /tmp/pylib scratch/wheels/*.whl > $O/pip.txt 2>&1
echo "pip rc=$? $(el)" >> $O/summary.txt
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
# The soak's own copy: the next call's tree replaces this one's.
mkdir -p /tmp/gs/bench /tmp/gs/tests
cp bench/soak.py /tmp/gs/bench/ && cp tests/graphserve_process.py /tmp/gs/tests/
cp scratch/mallprobe/libmallprobe.so /tmp/
for v in old new; do
  bin=/tmp/soak_$v/graphserve-gpu/bin
  rm -rf /tmp/out_$v /tmp/mp_$v.txt*
  PYTHONPATH=/tmp/pylib LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib \
  MALLPROBE_OUT=/tmp/mp_$v.txt MALLPROBE_ONLY=graphserve LD_PRELOAD=/tmp/libmallprobe.so \
    setsid nohup python3 /tmp/gs/bench/soak.py --server $bin/graphserve \
      --make-repository $bin/make_demo_repository --minutes 10.5 --device cuda:0 --threads 2 \
      --out /tmp/out_$v > /tmp/soak_$v.log 2>&1 < /dev/null &
done
sleep 5
ps -eo pid,sid,etimes,args | grep -E "soak.py|graphserve " | grep -v grep | cut -c1-160 >> $O/summary.txt
echo "started $(el)" >> $O/summary.txt
# Hold the machine while the soaks run; leave 30 s for the call's return.
while [ $(( $(date +%s)-start )) -lt 560 ]; do sleep 10; done
for v in old new; do
  cp /tmp/out_$v/soak.json $O/soak_${v}_part1.json 2>/dev/null
  tail -3 /tmp/soak_$v.log | cut -c1-400 >> $O/summary.txt
done
ps -eo pid,sid,etimes,args | grep -E "soak.py|graphserve " | grep -v grep | cut -c1-160 >> $O/summary.txt
echo "end of call $(el)" >> $O/summary.txt
