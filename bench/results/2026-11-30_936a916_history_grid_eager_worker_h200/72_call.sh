#!/bin/bash
# Call 72: the bundle of 936a916 (prepare --history --max-graphs; the eager
# fallback on a worker thread of its own): every GPU test (the end-to-end
# suite on CUDA includes RunsWhatNoBucketTakesEagerlyWithinEagerExtents);
# bucket_serving part eager (ResNet-50 between its exact sizes, BERT's tail
# past its largest bucket, against float64, p99 beside call 69's 170 ms);
# bench:encoder in float32 at batch 1 and 16 against PyTorch's graph, its
# dynamo export brought back stripped for reading its steps here.
B=scratch/bundle72.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
gpu_tests 300
BUCKET_PARTS=eager timeout $(( 480 - ($(date +%s)-start) )) bash bench/bucket_serving.sh $bin $O/buckets \
  > /tmp/buckets.txt 2>&1
echo "buckets rc=$? $(el)" >> $O/summary.txt
grep -E "^\\$|->|FAILED|eagerly" /tmp/buckets.txt | grep -v "^\[20" | cut -c1-700 >> $O/summary.txt
timeout $(( 580 - ($(date +%s)-start) )) python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo \
  --out $O/zoo --models bench:encoder --exporters dynamo --batch-sizes 1,16 --precision fp32 \
  > /tmp/zoo.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-900 >> $O/summary.txt
f=$(ls /tmp/graphserve-zoo/bench_encoder_dynamo_fp32.onnx 2>/dev/null)
[[ -n "$f" ]] && python3 bench/onnx_structure.py strip $f $O/encoder_dynamo_stripped.onnx >> $O/summary.txt 2>&1
echo "done $(el)" >> $O/summary.txt
