#!/bin/bash
# Call 59: TorchScript .half() transformers compute in float32 as written
# (call 58: 92 of 96 MatMuls float32). Served with precision fp16 (the pass
# converts what the export left in float32) against PyTorch's float16 graph,
# batch 1, 8, 64; the dynamo .half() exports as written beside them.
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
tar -C /tmp -xJf scratch/bundle56.tar.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > $O/summary.txt
run() {  # precision exporter
  left=$(( 560 - ($(date +%s)-start) ))
  timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out $O/zoo_$1_$2 \
    --models bert,distilbert,gpt2,vit --exporters $2 --batch-sizes 1,8,64 --precision $1 > /tmp/zoo_$1_$2.txt 2>&1
  echo "zoo $1 $2 rc=$? $(el)" >> $O/summary.txt
  grep '^|' /tmp/zoo_$1_$2.txt | cut -c1-900 >> $O/summary.txt
}
run fp16-half-config ts
run fp16 dynamo
python3 bench/onnx_structure.py strip /tmp/graphserve-zoo/bert_ts_fp16-half-config.onnx $O/bert_ts_half_stripped.onnx >> $O/summary.txt 2>&1
tail -30 /tmp/zoo_fp16-half-config_ts.txt > $O/zoo_ts_tail.txt
echo "done $(el)" >> $O/summary.txt
