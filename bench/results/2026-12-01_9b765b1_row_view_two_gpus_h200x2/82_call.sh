#!/bin/bash
# Call 82 (two H200s): the bundle of the row view, pitched copies and
# device-padded pageable rows (client perf --shape included): every GPU test
# (the two-GPU ones too); bucket_serving part shm (BERT through
# graphserve-client at lengths between buckets via the request, system and
# CUDA shared memory, alone and merged, against float64); graphserve-client
# perf --shape against BERT in CUDA shared memory; then the multi-GPU probe
# (CUDA shared memory on each GPU for models on one GPU and on two, against
# the host executor).
B=scratch/bundle82.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
BUCKET_PARTS=shm timeout 150 bash bench/bucket_serving.sh $bin $O/buckets > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "FAILED|shm ->|'exit': [1-9]" /tmp/buckets.txt | grep -v "^\[20" | cut -c1-600 >> $O/summary.txt
repo=/tmp/graphserve-buckets/repo_shm
$bin/graphserve --model-repository $repo --grpc-port 8121 --http-port 8120 --metrics-port 8122 \
  --model-control-mode explicit --load-model bert --device cuda:0 > /tmp/perf_server.log 2>&1 &
server=$!
for i in $(seq 600); do grep -q "serving gRPC on" /tmp/perf_server.log && break; sleep 0.1; done
for memory in cuda none; do
  timeout 40 $bin/graphserve-client --url 127.0.0.1:8121 perf --model bert --shape input_ids:20 \
    --shape attention_mask:20 --concurrency 1,4 --measurement-interval-ms 1000 --windows 2 \
    --shared-memory $memory --output-shared-memory-size $((20 * 768 * 4)) > /tmp/perf_$memory.txt 2>&1
  echo "client perf bert $memory rc=$? $(el)" >> $O/summary.txt
  grep -vE "^\s*$" /tmp/perf_$memory.txt | tail -6 | cut -c1-250 >> $O/summary.txt
done
kill $server; wait $server; echo "perf server exit $?" >> $O/summary.txt
timeout 250 bash bench/multi_gpu_probe.sh $bin $O/multi_gpu > /tmp/multi.txt 2>&1
echo "multi-gpu rc=$? $(el)" >> $O/summary.txt
cat $O/multi_gpu/multi_gpu_results.txt 2>/dev/null | head -40 | cut -c1-300 >> $O/summary.txt
tail -5 /tmp/multi.txt | cut -c1-300 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
