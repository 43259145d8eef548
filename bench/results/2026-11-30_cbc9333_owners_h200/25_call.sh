#!/bin/bash
# Call 25: where the RSS that grows per reload on the CUDA executor lives
# (call 24: +136 KiB per mlp reload, flat on the host executor): threads,
# descriptors and mappings counted, and /proc/PID/smaps summed by mapping
# after 10 and after 110 reloads.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
$bin/make_demo_repository --out /tmp/repo > /dev/null
$bin/graphserve --model-repository /tmp/repo --model-control-mode explicit --load-model '*' \
  --grpc-port 18001 --http-port 18000 --allow-metrics false > /tmp/server.log 2>&1 &
pid=$!
for i in $(seq 1 120); do curl -sf localhost:18000/v2/health/ready >/dev/null && break; sleep 0.5; done
python3 -c 'import json; print(json.dumps({"inputs":[{"name":"x","shape":[1,512],"datatype":"FP32","data":[0.1]*512}]}))' > /tmp/body.json
state() {
  echo "$1: rss_kib=$(awk '/VmRSS/{print $2}' /proc/$pid/status) threads=$(awk '/Threads/{print $2}' /proc/$pid/status) fds=$(ls /proc/$pid/fd | wc -l) maps=$(wc -l < /proc/$pid/maps)" >> $O/where.txt
}
reload() {
  for k in $(seq 1 $1); do
    curl -sf -X POST localhost:18000/v2/repository/models/mlp/load -d '{}' >/dev/null || echo fail >> $O/where.txt
    for j in 1 2 3; do curl -sf -X POST localhost:18000/v2/models/mlp/infer -H 'Content-Type: application/json' --data-binary @/tmp/body.json >/dev/null || echo fail >> $O/where.txt; done
  done
  sleep 1
}
state start
reload 10; state "after 10"; cp /proc/$pid/smaps /tmp/smaps_10
reload 50; state "after 60"
reload 50; state "after 110"; cp /proc/$pid/smaps /tmp/smaps_110
python3 - <<'PY' >> $O/where.txt
import collections, re
def read(path):
    sums = collections.Counter(); counts = collections.Counter(); name = None
    for line in open(path):
        if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
            parts = line.split(None, 5)
            name = parts[5].strip() if len(parts) > 5 else '[anon]'
            size = int(parts[0].split('-')[1], 16) - int(parts[0].split('-')[0], 16)
            if name == '[anon]': name = f'[anon {"<=64K" if size <= 65536 else "<=1M" if size <= 1 << 20 else "<=8M" if size <= 8 << 20 else ">8M"}]'
            counts[name] += 1
        elif line.startswith('Rss:'):
            sums[name] += int(line.split()[1])
    return sums, counts
a, ac = read('/tmp/smaps_10'); b, bc = read('/tmp/smaps_110')
print('Rss growth by mapping, 10 -> 110 reloads (KiB; mappings before -> after):')
for name in sorted(set(a) | set(b), key=lambda n: -(b[n] - a[n]))[:15]:
    print(f'  {b[name] - a[name]:+8d}  {name}  ({ac[name]} -> {bc[name]})')
PY
kill $pid; wait $pid
