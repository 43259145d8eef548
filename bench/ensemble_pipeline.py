#!/usr/bin/env python3
"""An ensemble of a preprocessing model and a torchvision CNN (random weights),
served by GraphServe as one CUDA graph, against the same ensemble step by step
and the two models called one after the other (bench/ensemble_bench.cc), with
PyTorch's CUDA graph of the same two stages for scale.

The preprocessing model takes what a camera or a decoder gives, uint8 images
[N, 224, 224, 3], and makes the CNN's input: float32, channels first,
ImageNet-normalised. Both models are exported here: the preprocessing model
written with onnx's helper, the CNN by torch.onnx's TorchScript exporter as
bench/model_zoo.py exports image models.

Writes ensemble_pipeline.md and ensemble_pipeline.json under --out.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402

SIZE = 224
MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], np.float32) * 255


def write_preprocess(path):
    """uint8 image [N, 224, 224, 3] -> (float - mean) / std, [N, 3, 224, 224]."""
    nodes = [
        helper.make_node("Cast", ["image"], ["as_float"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["as_float"], ["channels_first"], perm=[0, 3, 1, 2]),
        helper.make_node("Sub", ["channels_first", "mean"], ["centred"]),
        helper.make_node("Div", ["centred", "std"], ["pixels"]),
    ]
    graph = helper.make_graph(
        nodes, "preprocess",
        [helper.make_tensor_value_info("image", TensorProto.UINT8, ["N", SIZE, SIZE, 3])],
        [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])],
        [numpy_helper.from_array(MEAN.reshape(1, 3, 1, 1), "mean"),
         numpy_helper.from_array(STD.reshape(1, 3, 1, 1), "std")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


class Preprocess(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor(MEAN).reshape(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(STD).reshape(1, 3, 1, 1))

    def forward(self, image):
        return (image.float().permute(0, 3, 1, 2) - self.mean) / self.std


class Pipeline(torch.nn.Module):
    def __init__(self, cnn):
        super().__init__()
        self.preprocess = Preprocess()
        self.cnn = cnn

    def forward(self, image):
        return self.cnn(self.preprocess(image))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cnns", default="resnet50,resnet18")
    parser.add_argument("--batch-sizes", default="1,8")
    parser.add_argument("--iters", type=int, default=200)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    # GraphServe computes exact float32 unless told otherwise; so does PyTorch here.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    preprocess_path = os.path.join(args.work, "preprocess.onnx")
    write_preprocess(preprocess_path)
    results = []
    status = 0
    for name in args.cnns.split(","):
        torch.manual_seed(0)
        cnn = getattr(torchvision.models, name)(weights=None).eval()
        cnn_path = os.path.join(args.work, f"{name}.onnx")
        # As the zoo exports an image model: input x, output y, the batch dynamic.
        model_zoo.export(model_zoo.wrap(cnn, "image"), "image", cnn_path, "ts", torch.float32)
        bench_json = os.path.join(args.work, f"{name}_bench.json")
        command = [os.path.join(args.bin, "ensemble_bench"), "--preprocess", preprocess_path,
                   "--cnn", cnn_path, "--batch-sizes", args.batch_sizes,
                   "--iters", str(args.iters), "--out", bench_json]
        print("$", " ".join(command), flush=True)
        done = subprocess.run(command, capture_output=True, text=True, timeout=400)
        print(done.stdout[-4000:], done.stderr[-4000:], flush=True)
        if done.returncode != 0:
            status = 1
            results.append({"cnn": name, "error": done.stderr[-600:]})
            continue
        with open(bench_json) as f:
            bench = json.load(f)
        pipeline = Pipeline(cnn).cuda().eval()
        for row in bench["rows"]:
            image = torch.randint(0, 256, (row["batch"], SIZE, SIZE, 3), dtype=torch.uint8)
            row["torch_graph_us"] = model_zoo.time_torch_graph(pipeline, [image], iters=args.iters)
        results.append({"cnn": name, "pipeline": bench["pipeline"], "rows": bench["rows"]})
    with open(os.path.join(args.out, "ensemble_pipeline.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "results": results}, f, indent=1)
    lines = ["| CNN | batch | one graph p50 us | step by step p50 us | step by step, tensor "
             "through the host, p50 us | two calls p50 us | one graph / two calls | "
             "one graph / step by step | step by step / through the host | "
             "rel err vs two calls (one graph, step by step) | "
             "PyTorch CUDA graph replay us (GPU only) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        if "error" in result:
            lines.append(f"| {result['cnn']} | failed: {result['error'][:200]} |")
            continue
        for row in result["rows"]:
            lines.append(
                f"| {result['cnn']} | {row['batch']} | {row['pipeline_p50_us']:.1f} | "
                f"{row['steps_p50_us']:.1f} | {row['host_steps_p50_us']:.1f} | "
                f"{row['calls_p50_us']:.1f} | "
                f"{row['pipeline_p50_us'] / row['calls_p50_us']:.2f}x | "
                f"{row['pipeline_p50_us'] / row['steps_p50_us']:.2f}x | "
                f"{row['steps_p50_us'] / row['host_steps_p50_us']:.2f}x | "
                f"{row['rel_err_vs_calls']:.1e}, {row['steps_rel_err_vs_calls']:.1e} | "
                f"{row['torch_graph_us']:.1f} |")
    with open(os.path.join(args.out, "ensemble_pipeline.md"), "w") as f:
        f.write(f"# Ensemble as one CUDA graph, {torch.cuda.get_device_name(0)}\n\n")
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
