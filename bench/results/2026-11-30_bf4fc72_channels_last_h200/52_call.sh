#!/bin/bash
# Call 52: channels-last convolutions without depthwise ones (bin, 2c...),
# beside call 51's rule with them (bin51) and all NCHW
# (--channels-last-convs=false), alternated on the same float16 exports:
# ResNet-50, EfficientNet-B0, MobileNetV3, ConvNeXt-T, ResNeXt-50, RegNetY.
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
nvidia-smi -L > $O/summary.txt
rm -rf /tmp/graphserve-gpu /tmp/g51 && tar -C /tmp -xJf scratch/slim51.tar.xz && mv /tmp/graphserve-gpu /tmp/g51
tar -C /tmp -xJf scratch/slim52.tar.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
models="resnet50 efficientnet_b0 mobilenet_v3_large convnext_tiny tv:resnext50_32x4d tv:regnet_y_400mf"
timeout 300 python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo \
  --models ${models// /,} --exporters dynamo --batch-sizes 1,8 --precision fp16 > /tmp/zoo.txt 2>&1
echo "zoo fp16 rc=$? $(el)" >> $O/summary.txt
grep '^|' /tmp/zoo.txt | cut -c1-700 >> $O/summary.txt
for round in 1 2; do
  for variant in no_depthwise with_depthwise nchw; do
    b=$bin/runtime_bench; flag=true
    [ $variant = with_depthwise ] && b=/tmp/g51/bin/runtime_bench
    [ $variant = nchw ] && flag=false
    for m in $models; do
      f=/tmp/graphserve-zoo/${m//:/_}_dynamo_fp16
      [ -f $f.onnx ] || continue
      timeout 60 $b --model $f.onnx --batch-sizes 1,8 --inputs ${f}_in --iters 200 \
        --channels-last-convs=$flag --json /tmp/rb_${m//:/_}_${variant}_r$round.json > /dev/null 2>&1
      echo "$m $variant round $round rc=$? $(python3 -c "import json; print([(r['batch'], r['graph_compute_us']) for r in json.load(open('/tmp/rb_${m//:/_}_${variant}_r$round.json'))])" 2>&1) $(el)" >> $O/summary.txt
    done
  done
done
tar -C /tmp -cJf $O/runtime_bench_json.tar.xz $(cd /tmp && ls rb_*.json)
