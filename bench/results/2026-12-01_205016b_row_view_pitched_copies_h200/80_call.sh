#!/bin/bash
# Call 80: the bundle of 205016b (one RowView; Note [Pitched row copies]):
# every GPU test; bucket_serving parts shm (BERT through graphserve-client at
# lengths between buckets, via the request, system and CUDA shared memory,
# alone and merged, against float64) and bert (the grid's saturated
# throughput and its answers against float64); then Triton's perf_analyzer
# against BERT at 20 tokens (a bucket of 32) over gRPC with its inputs and
# outputs in CUDA, system and no shared memory.
B=scratch/bundle80.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
BUCKET_PARTS=shm,bert timeout 330 bash bench/bucket_serving.sh $bin $O/buckets > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED|  shm|grid|failed" /tmp/buckets.txt | grep -v "^\[20" | cut -c1-600 >> $O/summary.txt
cp /tmp/graphserve-buckets/shm_server.log $O/ 2>/dev/null
# perf_analyzer 2.51 against the shm part's repository.
pa=/tmp/graphserve-gpu/pa
repo=/tmp/graphserve-buckets/repo_shm
$bin/graphserve --model-repository $repo --grpc-port 8121 --http-port 8120 --metrics-port 8122 \
  --model-control-mode explicit --load-model bert --device cuda > /tmp/pa_server.log 2>&1 &
server=$!
for i in $(seq 600); do grep -q "serving gRPC on" /tmp/pa_server.log && break; sleep 0.1; done
echo "| memory | concurrency | infer/s | p50 us | p99 us |" > $O/pa_bert.md
echo "|---|---|---|---|---|" >> $O/pa_bert.md
for memory in cuda system none; do
  LD_LIBRARY_PATH=$pa:$LD_LIBRARY_PATH timeout 60 $pa/perf_analyzer -m bert -u 127.0.0.1:8121 \
    -i grpc -b 1 --shape input_ids:20 --shape attention_mask:20 --input-data zero \
    --shared-memory $memory --output-shared-memory-size $((20 * 768 * 4)) \
    --concurrency-range 1:4:3 --measurement-interval 1000 --stability-percentage 25 \
    --max-trials 8 --percentile 99 -f /tmp/pa_$memory.csv > /tmp/pa_$memory.log 2>&1
  echo "perf_analyzer bert $memory rc=$? $(el)" >> $O/summary.txt
  tail -4 /tmp/pa_$memory.log | cut -c1-300 >> $O/summary.txt
  python3 - /tmp/pa_$memory.csv $memory >> $O/pa_bert.md <<'PY'
import csv, sys
try:
    rows = list(csv.DictReader(open(sys.argv[1])))
except OSError:
    rows = []
for row in sorted(rows, key=lambda r: int(r["Concurrency"])):
    print(f"| {sys.argv[2]} | {row['Concurrency']} | {float(row['Inferences/Second']):.0f} | "
          f"{row['p50 latency']} | {row['p99 latency']} |")
PY
done
kill $server; wait $server
echo "pa server exit $?" >> $O/summary.txt
cat $O/pa_bert.md >> $O/summary.txt
grep -iE "error|warn" /tmp/pa_server.log | head -10 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
