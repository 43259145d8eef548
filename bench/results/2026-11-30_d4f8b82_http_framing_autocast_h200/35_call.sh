#!/bin/bash
# Call 35: the HTTP connection stream (Note [Framing under the library] in
# server/http_connection.cc). server_e2e_test whole on CUDA (its HTTP cases
# go through the new stream); bench/attack_probe.py against the CUDA server;
# perf_analyzer over HTTP, the old server (754523a: cpp-httplib's own
# connection loop) against the new one, in the order old new new old.
B=scratch/slim35.tar.xz  # bin/{graphserve,make_demo_repository,server_e2e_test}, bin_old/graphserve, lib, pa/
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
GRAPHSERVE_E2E_DEVICE=cuda timeout 240 $bin/server_e2e_test > /tmp/e2e.txt 2>&1
echo "server_e2e_test (cuda, whole) rc=$? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/e2e.txt | tr '\n' ' ') $(el)" >> $O/summary.txt
grep -B3 -A12 "Failure" /tmp/e2e.txt | head -40 >> $O/summary.txt
python3 -m pip install --no-deps --no-index --quiet --target /tmp/pylib scratch/wheels/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/pylib timeout 200 python3 bench/attack_probe.py --server $bin/graphserve \
  --make-repository $bin/make_demo_repository --device cuda:0 --out $O/attack > /tmp/attack.txt 2>&1
echo "attack_probe rc=$? $(el)" >> $O/summary.txt
tail -40 /tmp/attack.txt | cut -c1-300 >> $O/summary.txt
pa=/tmp/graphserve-gpu/pa
export PERF_ANALYZER=$pa/perf_analyzer
i=0
for side in old new new old; do
  i=$((i+1))
  dir=$bin; [[ $side == old ]] && dir=$old
  LD_LIBRARY_PATH=$pa:$LD_LIBRARY_PATH PA_PROTOCOLS=http PA_MEMORIES=none timeout 150 \
    bash bench/perf_analyzer_shm.sh $dir /tmp/pa_$i > /tmp/pa_$i.txt 2>&1
  echo "perf_analyzer http run $i ($side) rc=$? $(el)" >> $O/summary.txt
  sed "s/^| http/| $side $i http/" /tmp/pa_$i/results.md | grep "^| $side" >> $O/pa_ab.md
done
cat $O/pa_ab.md >> $O/summary.txt
