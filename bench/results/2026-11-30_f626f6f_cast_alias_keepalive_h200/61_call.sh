#!/bin/bash
# Call 61: perf_analyzer over HTTP against the server with and without the
# keep-alive change (de48749: a connection serves any number of requests;
# bin_old is the same server built with that line removed, cpp-httplib's
# default of five requests a connection), in the order old new new old, on
# the demo repository's mlp with dynamic batching, batch 1 and 8, concurrency
# 1 and 4. Binaries of f626f6f.
B=scratch/bundle61.tar.xz  # bin/{graphserve,make_demo_repository}, bin_old/graphserve, lib, pa/
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
old=/tmp/graphserve-gpu/bin_old
ln -sf $bin/make_demo_repository $old/make_demo_repository
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
pa=/tmp/graphserve-gpu/pa
export PERF_ANALYZER=$pa/perf_analyzer
echo "| side | run | protocol | memory | batch | concurrency | infer/s | p50 us | p99 us |" > $O/pa_ab.md
echo "|---|---|---|---|---|---|---|---|---|" >> $O/pa_ab.md
i=0
for side in old new new old; do
  i=$((i+1))
  dir=$bin; [[ $side == old ]] && dir=$old
  LD_LIBRARY_PATH=$pa:$LD_LIBRARY_PATH PA_PROTOCOLS=http PA_MEMORIES=none timeout 150 \
    bash bench/perf_analyzer_shm.sh $dir /tmp/pa_$i > /tmp/pa_$i.txt 2>&1
  echo "perf_analyzer http run $i ($side) rc=$? $(el)" >> $O/summary.txt
  tail -5 /tmp/pa_$i.txt | cut -c1-300 >> $O/summary.txt
  grep "^| http" /tmp/pa_$i/results.md | sed "s/^| http/| $side | $i | http/" >> $O/pa_ab.md
done
cat $O/pa_ab.md >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
