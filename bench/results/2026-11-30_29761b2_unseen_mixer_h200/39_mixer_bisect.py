"""Why timm's mixer_b16_224 fails the padding check at batch 8 (call 38).

Exports it as the zoo does (dynamo), checks that PyTorch and onnxruntime give
real rows unchanged when the padding rows become NaN / huge, then cuts the
ONNX graph at the outputs of successive nodes of the first blocks and runs
runtime_bench on each cut at batch 1 and 4: the first cut whose padding check
fails names the node."""
import json, os, subprocess, sys
import numpy as np
import onnx, onnx.utils
import torch
sys.path.insert(0, "bench")
import model_zoo

work, out, bin_dir = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
report = {}
spec = model_zoo.model_spec("timm:mixer_b16_224")
torch.manual_seed(0)
model = model_zoo.wrap(spec["build"]().eval(), "image")
path = os.path.join(work, "mixer.onnx")
model_zoo.export(model, "image", path, "dynamo", torch.float32)
x = model_zoo.make_inputs("image", 4, 1)[0]
garbage = x.clone()
garbage[2:] = float("nan")
with torch.no_grad():
    a = model(x)[:2]
    b = model(garbage)[:2]
report["torch_rows_unchanged"] = bool(torch.equal(a, b))
import onnxruntime as ort
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
name = sess.get_inputs()[0].name
ra = sess.run(None, {name: x.numpy()})[0][:2]
rb = sess.run(None, {name: garbage.numpy()})[0][:2]
report["ort_rows_unchanged"] = bool(np.array_equal(ra, rb))
m = onnx.load(path)
m = onnx.shape_inference.infer_shapes(m)
shapes = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
          for v in list(m.graph.value_info) + list(m.graph.output)}
nodes = m.graph.node
report["first_nodes"] = [(n.op_type, list(n.input), list(n.output),
                          [shapes.get(o) for o in n.output]) for n in nodes[:40]]
report["cuts"] = []
os.makedirs(os.path.join(work, "cuts"), exist_ok=True)
for i, node in enumerate(nodes[:40]):
    target = node.output[0]
    if target not in shapes:
        continue
    cut = os.path.join(work, "cuts", f"cut{i}.onnx")
    try:
        onnx.utils.extract_model(path, cut, [name], [target])
    except Exception as error:
        report["cuts"].append((i, node.op_type, "extract: " + str(error)[:200]))
        continue
    done = subprocess.run([os.path.join(bin_dir, "runtime_bench"), "--model", cut, "--batch-sizes",
                           "1,4", "--iters", "3"], capture_output=True, text=True, timeout=120)
    text = (done.stdout + done.stderr).strip().splitlines()
    verdict = "ok" if done.returncode == 0 else (text[-1] if text else "?")[:300]
    report["cuts"].append((i, node.op_type, shapes.get(target), verdict))
    print(i, node.op_type, shapes.get(target), verdict, flush=True)
    if done.returncode != 0 and "mixes rows" in verdict:
        break
json.dump(report, open(os.path.join(out, "mixer_bisect.json"), "w"), indent=1, default=str)
print(json.dumps({k: v for k, v in report.items() if k != "first_nodes"}, default=str)[:3000])
