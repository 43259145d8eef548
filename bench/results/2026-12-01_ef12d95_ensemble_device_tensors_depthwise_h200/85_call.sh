#!/bin/bash
# Call 85: b3afad5/ef12d95. The ensemble GPU tests (the tensor between steps
# in the ensemble's device buffer, Note [Ensemble tensors on the device]),
# then bench/ensemble_pipeline.py: one graph, step by step on the device,
# step by step through the host, two calls (ResNet-50, ResNet-18, b1/b8).
# Then EfficientNet-B0 with BatchNorm statistics settled from random
# batches (model_zoo --settle-norms), precision auto against autocast's
# graph and torch.compile, batch 1 and 8, dynamo exporter.
B=scratch/bundle85.tar.xz
O=$OUT
nvidia-smi -L > $O/summary.txt
source bench/device_env.sh
for t in ensemble_pipeline_test pipeline_graphs_test; do
  timeout 200 $bin/$t > $O/${t}.txt 2>&1; echo "$t rc=$? $(el)" >> $O/summary.txt
  grep -E "^\[  (PASSED|FAILED) |tests ran" $O/${t}.txt >> $O/summary.txt
done
timeout 300 python3 bench/ensemble_pipeline.py --bin $bin --work /tmp/graphserve-ensemble --out $O/ensemble \
  --cnns resnet50,resnet18 > $O/ensemble.log 2>&1
echo "ensemble rc=$? $(el)" >> $O/summary.txt
cat $O/ensemble/ensemble_pipeline.md >> $O/summary.txt 2>/dev/null
grep -E "ensemble: " $O/ensemble.log >> $O/summary.txt
ZOO_MODELS=efficientnet_b0 ZOO_EXPORTERS=dynamo ZOO_PRECISION=auto-config ZOO_BATCH_SIZES=1,8 \
  ZOO_AUTOCAST_ANCHOR=1 ZOO_COMPILE_ANCHOR=1 ZOO_SETTLE_NORMS=1 \
  timeout 420 bash bench/model_zoo.sh $bin $O/zoo_auto > $O/zoo_auto.log 2>&1
echo "zoo auto rc=$? $(el)" >> $O/summary.txt
cat $O/zoo_auto/model_zoo.md >> $O/summary.txt 2>/dev/null
grep -E "precision auto keeps" $O/zoo_auto.log | cut -c1-600 >> $O/summary.txt
xz -9 $O/zoo_auto/model_zoo.log 2>/dev/null
echo "done $(el)" >> $O/summary.txt
