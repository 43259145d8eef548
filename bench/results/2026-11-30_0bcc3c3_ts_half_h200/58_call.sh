#!/bin/bash
# Call 58: where a TorchScript .half() export's time goes (issue 28: BERT
# 2.21x / 5.18x of PyTorch's graph in call 56). The bundle of 0bcc3c3.
# kernel_profile.sh on BERT-base ts fp16 (ncu of one replay, ours beside
# PyTorch's), each export's structure (ops by output dtype, Casts), and
# weightless copies of the TorchScript exports to read here.
O=$OUT
start=$(date +%s)
el() { echo "after $(( $(date +%s)-start )) s"; }
tar -C /tmp -xJf scratch/bundle56.tar.xz
bin=/tmp/graphserve-gpu/bin
cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null || true)
nvrtc_lib=$(python3 -c 'import glob, os, site; print(next((os.path.dirname(p) for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libnvrtc.so.13", recursive=True)), ""))' 2>/dev/null || true)
export LD_LIBRARY_PATH=$bin/../lib:/usr/local/cuda/lib64:$cudnn_lib:$nvrtc_lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > $O/summary.txt
timeout 330 bash bench/kernel_profile.sh $bin /tmp/kp bert fp16 ts > $O/kernel_profile_bert_ts.txt 2>&1
echo "kernel_profile rc=$? $(el)" >> $O/summary.txt
cp /tmp/kp/ours_b8.json /tmp/kp/torch_b8.json /tmp/kp/zoo/model_zoo.md $O/ 2>/dev/null
for m in bert_ts_fp16; do
  f=/tmp/graphserve-zoo/$m.onnx
  python3 bench/onnx_structure.py summary $f > $O/structure_$m.txt 2>&1
  python3 bench/onnx_structure.py strip $f $O/${m}_stripped.onnx >> $O/summary.txt 2>&1
done
echo "structure $(el)" >> $O/summary.txt
left=$(( 540 - ($(date +%s)-start) ))
timeout $left python3 bench/model_zoo.py --bin $bin --work /tmp/graphserve-zoo --out /tmp/zoo2 \
  --models distilbert,gpt2,vit --exporters ts --batch-sizes 8 --precision fp16 > /tmp/zoo2.txt 2>&1
echo "zoo rc=$? $(el)" >> $O/summary.txt
for m in distilbert_ts_fp16 gpt2_ts_fp16 vit_ts_fp16; do
  f=/tmp/graphserve-zoo/$m.onnx
  [ -f $f ] || continue
  python3 bench/onnx_structure.py summary $f > $O/structure_$m.txt 2>&1
  python3 bench/onnx_structure.py strip $f $O/${m}_stripped.onnx >> $O/summary.txt 2>&1
done
grep '^|' /tmp/zoo2.txt | cut -c1-600 >> $O/summary.txt
echo "done $(el)" >> $O/summary.txt
