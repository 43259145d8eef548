#!/bin/bash
# Call 26: is the per-reload RSS growth of call 24/25 memory the server still
# holds (a leak) or freed memory glibc keeps (fragmentation)? mallinfo2 every
# second (bytes in use over all arenas) through an LD_PRELOAD probe; then
# malloc_trim(0); and glibc's mtrace over 40 reloads, its allocations still
# live at the end grouped by the code that made them.
B=.bundle/graphserve-gpu.tar.xz
O=$OUT
rm -rf /tmp/graphserve-gpu && tar -C /tmp -xJf $B
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
$bin/make_demo_repository --out /tmp/repo > /dev/null
debug_lib=$(ls /lib/x86_64-linux-gnu/libc_malloc_debug.so.0 /usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0 2>/dev/null | head -1)
echo "malloc debug: $debug_lib" > $O/mall.txt
rm -f /tmp/mp.txt*
MALLPROBE_OUT=/tmp/mp.txt MALLOC_TRACE=/tmp/mtrace.txt LD_PRELOAD="$debug_lib $PWD/scratch/mallprobe/libmallprobe.so" \
  $bin/graphserve --model-repository /tmp/repo --model-control-mode explicit --load-model '*' \
  --grpc-port 18001 --http-port 18000 --allow-metrics false > /tmp/server.log 2>&1 &
pid=$!
for i in $(seq 1 120); do curl -sf localhost:18000/v2/health/ready >/dev/null && break; sleep 0.5; done
python3 -c 'import json; print(json.dumps({"inputs":[{"name":"x","shape":[1,512],"datatype":"FP32","data":[0.1]*512}]}))' > /tmp/body.json
state() { echo "$1: rss_kib=$(awk '/VmRSS/{print $2}' /proc/$pid/status) $(tail -1 /tmp/mp.txt)" >> $O/mall.txt; }
reload() {
  for k in $(seq 1 $1); do
    curl -sf -X POST localhost:18000/v2/repository/models/mlp/load -d '{}' >/dev/null || echo fail >> $O/mall.txt
    for j in 1 2 3; do curl -sf -X POST localhost:18000/v2/models/mlp/infer -H 'Content-Type: application/json' --data-binary @/tmp/body.json >/dev/null || echo fail >> $O/mall.txt; done
  done
  sleep 2
}
state start
reload 20; state "after 20"
touch /tmp/mp.txt.trace_on; sleep 2
reload 40; state "after 60 (traced 21-60)"
touch /tmp/mp.txt.trace_off; sleep 2
reload 40; state "after 100"
touch /tmp/mp.txt.trim; sleep 2.5; state "after malloc_trim"
kill $pid; wait $pid
ls -la /tmp/mtrace.txt >> $O/mall.txt
python3 - <<'PY' >> $O/mall.txt
import collections, re
live = {}
for line in open('/tmp/mtrace.txt', errors='replace'):
    m = re.match(r'^@ (\S+) ([-+<>]) (0x[0-9a-f]+)(?: (0x[0-9a-f]+))?', line)
    if not m: continue
    caller, op, ptr, size = m.groups()
    if op in '+>':
        live[ptr] = (caller, int(size, 16) if size else 0)
    elif op in '-<':
        live.pop(ptr, None)
by = collections.defaultdict(lambda: [0, 0])
for caller, size in live.values():
    key = re.sub(r'\[0x[0-9a-f]+\]$', '', caller)
    by[key][0] += size; by[key][1] += 1
total = sum(v[0] for v in by.values())
print(f'allocations made while traced (40 reloads) and still live at its end: {sum(v[1] for v in by.values())}, {total} bytes')
for key, (size, count) in sorted(by.items(), key=lambda kv: -kv[1][0])[:20]:
    print(f'  {size:10d} B {count:7d} x  {key}')
PY
