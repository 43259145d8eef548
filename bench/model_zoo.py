#!/usr/bin/env python3
"""Model zoo probe (issue 27): real architectures from transformers, torchvision
and timm, random weights, exported as users export them, run by GraphServe's
CUDA executor and compared with PyTorch in float64. The runtime benchmark's
models (bench/export_models.py: mlp, dlrm_dense, encoder, ...) run here too,
named "bench:NAME", with their seeded weights and their own input names.

For each model and each exporter (TorchScript at opset 17, dynamo at its
default opset, and "newest": the dynamo export converted by the installed
onnx's version converter to that onnx's newest opset and IR version, as a
file saved by the newest onnx is): export with the batch dim dynamic (sequence length and image
size fixed: dynamic non-batch dims are the shapes issue), list the op types
the op registry lacks, then run `runtime_bench` (import, bind, plan, capture,
replay) at batch 1, 3 and 8 on the same inputs as PyTorch and compare:

  rel err = ||ours - torch_f64|| / ||torch_f64||   (TF32 off on both sides)

beside PyTorch's own error in the precision served against the same
reference (the table's bracketed column, in every precision), and time our
graph replay against PyTorch's CUDA graph of the same model in
float32 (bare replay, median of interleaved rounds, batch 1, 8, 16 and 64 where
asked).

--precision fp16 exports the model as users export a half-precision model
(`model.half()`, float16 images and features; token ids stay int64), runs it
as written, and compares it with PyTorch in float64 on the same
(float16-rounded) weights and inputs; the timing is against PyTorch's CUDA graph of the float16 model. --precision
tf32 runs the float32 model with TF32 allowed on both sides.

Usage (on the GPU machine, from the repository root):
  python3 bench/model_zoo.py --bin DIR --work DIR --out DIR [--models a,b] [--exporters ts,dynamo]
Writes OUT/model_zoo.md and OUT/model_zoo.json; a model that fails anywhere
is a row saying where and why, never a stop.
"""

import argparse
import contextlib
import copy
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402  (beside this file: the bench:NAME models)

SEQ = 128      # text models' sequence length
# The batch sizes timed against PyTorch (3 checks an odd size only; 16 is the
# ranking MLP's target batch).
TIMED_BATCHES = (1, 8, 16, 64)
NOTABLE_OPS = {"Attention", "RMSNormalization", "RotaryEmbedding", "Resize", "Einsum"}
IMAGE = 224    # vision models' image size
DETECTION_IMAGE = 320  # detectors' (SSDlite's native size; SSD300's extra layers need >= 300)
VOCAB = 30000  # token ids drawn below every vocabulary used here


def _hf(kind, config_name, model_class):
    def build():
        import transformers
        config = getattr(transformers, config_name)()
        if hasattr(config, "attn_implementation"):
            config._attn_implementation = "eager"
        model = getattr(transformers, model_class)(config)
        return model
    return dict(kind=kind, build=build)


def _torchvision(name, kind="image"):
    def build():
        import torchvision
        models = torchvision.models
        if hasattr(models, name):
            return getattr(models, name)(weights=None)
        # A segmentation or detection model: its backbone would be downloaded
        # pretrained unless told otherwise.
        family = models.segmentation if hasattr(models.segmentation, name) else models.detection
        return getattr(family, name)(weights=None, weights_backbone=None)
    return dict(kind=kind, build=build)


def _timm(name):
    def build():
        import timm
        model = timm.create_model(name, pretrained=False)
        # Some timm models zero their classifier at init (MLP-Mixer's head):
        # every output would be 0 and every comparison vacuous. Random
        # weights there too, seeded like the rest.
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() >= 2 and not parameter.any():
                    parameter.normal_(0.0, 0.02)
        return model
    return dict(kind="image", build=build)


class Features(str):
    """The kind of a bench/export_models.py model: float inputs of fixed
    per-row shapes under the model's own argument names (ModelSpec.inputs:
    [(name, shape without the batch)]). It is the string "features", so that
    every test of a kind reads it as it reads "image", and it carries the
    inputs that input_names and make_inputs read."""

    def __new__(cls, inputs):
        kind = super().__new__(cls, "features")
        kind.inputs = [(name, tuple(shape)) for name, shape in inputs]
        return kind


def _bench(name):
    """bench/export_models.py's model NAME with its seeded weights (the
    runtime benchmark's). Its build turns PyTorch's MHA fast path off
    (export_models._disable_mha_fastpath), so that the encoder's
    nn.TransformerEncoderLayer exports and runs as plain ops; main restores
    the setting after each probe."""
    spec = export_models.SPECS[name]
    return dict(kind=Features(spec.inputs), build=spec.build)


MODELS = {
    "bert": _hf("text_mask", "BertConfig", "BertModel"),
    "roberta": _hf("text_mask", "RobertaConfig", "RobertaModel"),
    "distilbert": _hf("text_mask", "DistilBertConfig", "DistilBertModel"),
    "gpt2": _hf("text", "GPT2Config", "GPT2Model"),
    "t5_encoder": _hf("text_mask", "T5Config", "T5EncoderModel"),
    "electra": _hf("text_mask", "ElectraConfig", "ElectraModel"),
    "mpnet": _hf("text_mask", "MPNetConfig", "MPNetModel"),
    "albert": _hf("text_mask", "AlbertConfig", "AlbertModel"),
    "vit": _hf("pixels", "ViTConfig", "ViTModel"),
    # Detectors whose outputs are one box per query (no NMS): every output
    # shape is fixed by the input's.
    "detr": _hf("pixels_detection", "DetrConfig", "DetrForObjectDetection"),
    "yolos": _hf("pixels_detection", "YolosConfig", "YolosForObjectDetection"),
    "rt_detr": _hf("pixels_detection", "RTDetrConfig", "RTDetrForObjectDetection"),  # GridSample
    "conditional_detr": _hf("pixels_detection", "ConditionalDetrConfig",
                            "ConditionalDetrForObjectDetection"),
    # Multi-scale deformable attention: GridSample.
    "deformable_detr": _hf("pixels_detection", "DeformableDetrConfig",
                           "DeformableDetrForObjectDetection"),
    "d_fine": _hf("pixels_detection", "DFineConfig", "DFineForObjectDetection"),
    # Depth estimation: DPT's and Depth Anything's reassemble stages upsample
    # with ConvTranspose.
    "dpt": _hf("pixels_depth", "DPTConfig", "DPTForDepthEstimation"),
    "depth_anything": _hf("pixels_depth", "DepthAnythingConfig", "DepthAnythingForDepthEstimation"),
    "deit": _hf("pixels", "DeiTConfig", "DeiTModel"),
    "swin": _hf("pixels", "SwinConfig", "SwinModel"),
    "convnext_tiny": _torchvision("convnext_tiny"),
    "efficientnet_b0": _torchvision("efficientnet_b0"),
    "resnet50": _torchvision("resnet50"),
    "mobilenet_v3_large": _torchvision("mobilenet_v3_large"),
    "regnet_timm": _timm("regnety_008"),
    "deit_timm": _timm("deit_tiny_patch16_224"),
}


def model_spec(name):
    """A MODELS entry, or any torchvision or timm image model named
    "tv:NAME" or "timm:NAME" (architectures nobody listed: issue 27's unseen
    models), or any model of bench/export_models.py named "bench:NAME".
    "tvhead:NAME" is a torchvision detector (retinanet_resnet50_fpn,
    fcos_resnet50_fpn, ssd300_vgg16, ssdlite320_mobilenet_v3_large) as
    detectors are commonly served: backbone and head, raw per-anchor outputs,
    decoding and NMS left to the client; "tv:NAME" of a detector is the whole
    of it, NMS included."""
    if name.startswith("bench:"):
        return _bench(name[6:])
    if name.startswith("tvhead:"):
        return _torchvision(name[7:], kind="image_detection")
    if name.startswith("tv:"):
        detector = _is_torchvision_detector(name[3:])
        return _torchvision(name[3:], kind="image_detector" if detector else "image")
    if name.startswith("timm:"):
        return _timm(name[5:])
    return MODELS[name]


def _is_torchvision_detector(name):
    import torchvision
    return hasattr(torchvision.models.detection, name) and not hasattr(torchvision.models, name)


def _first_tensor(out):
    """last_hidden_state, logits, or a torchvision segmentation model's "out":
    the one output every probe compares."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    if isinstance(out, dict):
        return out["out"]
    return out[0]


# Named positional inputs (no *args), so that both exporters see the
# signature users export: the dynamo exporter maps dynamic_shapes by name.
class TextWithMask(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return _first_tensor(self.model(input_ids=input_ids, attention_mask=attention_mask))


class Text(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return _first_tensor(self.model(input_ids=input_ids))


class Pixels(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return _first_tensor(self.model(pixel_values=pixel_values))


class PixelsDetection(torch.nn.Module):
    """A transformers detector's two heads in one tensor, [batch, queries,
    classes + 1 + 4]: the class logits and the boxes side by side, so that the
    probe's one comparison covers both."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        out = self.model(pixel_values=pixel_values)
        return torch.cat([out.logits, out.pred_boxes], dim=-1)


class PixelsDepth(torch.nn.Module):
    """A transformers depth estimator: its predicted depth, [batch, H, W]."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model(pixel_values=pixel_values).predicted_depth


class ImageDetection(torch.nn.Module):
    """A torchvision detector's backbone and head without its transform
    (resize, normalise) and postprocess (anchor decoding, NMS): every head
    output ([batch, anchors, k] each, by name) side by side in one tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        features = self.model.backbone(x)
        features = list(features.values()) if isinstance(features, dict) else [features]
        out = self.model.head(features)
        return torch.cat([out[key] for key in sorted(out)], dim=-1)


class ImageDetector(torch.nn.Module):
    """A whole torchvision detector, transform and NMS included: the boxes
    kept for the first image, a count that depends on the data."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(list(x))[0]["boxes"]


class Image(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return _first_tensor(self.model(x))


def _as_built(model):
    # export_models' models take named tensor arguments and return one
    # tensor: the signature both exporters and the probe need already.
    return model


# --precision: (the exported model's dtype, PyTorch's side's dtype, our
# runtime_bench --precision).
PRECISIONS = {
    "fp32": (torch.float32, torch.float32, "fp32"),
    "tf32": (torch.float32, torch.float32, "tf32"),
    "fp16": (torch.float16, torch.float16, "fp32"),  # as written: a float16 model
    "fp16-config": (torch.float32, torch.float16, "fp16"),
    # a float16 model served with precision fp16: the pass converts what the
    # export left in float32 (all of a TorchScript .half() transformer's
    # GEMMs after its first LayerNorm), against PyTorch's float16 model.
    "fp16-half-config": (torch.float16, torch.float16, "fp16"),
    "bf16-config": (torch.float32, torch.bfloat16, "bf16"),
    # precision auto: float16 per node, against PyTorch's model.half().
    "auto-config": (torch.float32, torch.float16, "auto"),
}

WRAPPERS = {"text_mask": TextWithMask, "text": Text, "pixels": Pixels, "image": Image,
            "pixels_detection": PixelsDetection, "pixels_depth": PixelsDepth,
            "image_detection": ImageDetection,
            "image_detector": ImageDetector, "features": _as_built}


def wrap(model, kind):
    """The model in its probe's wrapper, in eval mode: a wrapper is built in
    training mode, and the TorchScript exporter restores the mode it found
    on the whole module tree after exporting (BatchNorm on batch statistics,
    dropout on, a torchvision detector asking for targets)."""
    return WRAPPERS[kind](model.eval()).eval()


def settle_norm_statistics(model, kind, batches=8, batch=8):
    """Sets every BatchNorm's running mean and variance to the statistics of
    its inputs over random batches, as training leaves them, the rest of the
    model in eval mode. With initialisation's statistics (mean 0, variance
    1) a deep CNN's activations shrink layer by layer: EfficientNet-B0's
    fall below float16's smallest normal number, so PyTorch's own float16
    answer is wrong (relative error 1.0) and precision auto keeps most nodes
    in float32 for their values. Settled, they are of the scale a trained
    model's are."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches
        norm.train()
    with torch.no_grad():
        for seed in range(batches):
            model(*make_inputs(kind, batch, 9000 + seed))
    model.eval()


def input_names(kind):
    if kind == "features":
        return [name for name, _ in kind.inputs]
    return {"text_mask": ["input_ids", "attention_mask"], "text": ["input_ids"],
            "pixels": ["pixel_values"], "pixels_detection": ["pixel_values"],
            "pixels_depth": ["pixel_values"]}.get(kind, ["x"])


def make_inputs(kind, batch, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    if kind.startswith("text"):
        ids = torch.randint(1, VOCAB, (batch, SEQ), generator=g)
        if kind == "text":
            return [ids]
        mask = torch.ones(batch, SEQ, dtype=torch.int64)
        mask[:, SEQ - SEQ // 4:] = 0  # the last quarter padding, as a real batch has
        return [ids, mask]
    if kind == "features":
        return [torch.randn(batch, *shape, generator=g).to(dtype) for _, shape in kind.inputs]
    size = DETECTION_IMAGE if "detect" in kind else IMAGE
    return [torch.randn(batch, 3, size, size, generator=g).to(dtype)]


def dynamic_dims(kind, dynamic_sequence):
    """The dims exported dynamic: the batch, and a text model's sequence when asked."""
    if dynamic_sequence and kind.startswith("text"):
        return {0: "batch", 1: "sequence"}
    return {0: "batch"}


def export(model, kind, path, exporter, dtype, dynamic_sequence=False, opset=None):
    names = input_names(kind)
    dims = dynamic_dims(kind, dynamic_sequence)
    args = tuple(make_inputs(kind, 3, 0, dtype))
    if dtype != torch.float32:
        # Half precision is traced on the GPU, where PyTorch has every kernel.
        model.cuda()
        args = tuple(t.cuda() for t in args)
    with torch.no_grad():
        if exporter == "ts":
            torch.onnx.export(model, args, path, input_names=names, output_names=["y"],
                              dynamic_axes={n: dims for n in names + ["y"]},
                              opset_version=17, do_constant_folding=True, dynamo=False)
        else:
            # AUTO: the batch dim dynamic where the model allows it.
            shapes = {name: {d: torch.export.Dim.AUTO for d in dims} for name in names}
            program = torch.onnx.export(model, args, dynamic_shapes=shapes, input_names=names,
                                        output_names=["y"], dynamo=True, opset_version=opset)
            program.save(path)
            if exporter == "newest":
                save_as_newest_onnx(path)


def save_as_newest_onnx(path):
    """Rewrites the model at `path` as the installed onnx writes a model of
    today: its default domain at onnx's newest opset (the version converter's
    adapters rewrite the ops whose signature changed) and onnx's IR version."""
    import onnx
    from onnx import version_converter
    proto = onnx.load(path)
    proto = version_converter.convert_version(proto, onnx.defs.onnx_opset_version())
    proto.ir_version = onnx.IR_VERSION
    onnx.save(proto, path)


def registry_ops(repo):
    ops = set()
    with open(os.path.join(repo, "README.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.split("|")]
            # A row of the op table: | op | family | opsets | attributes | notes |.
            if len(cells) == 7 and cells[3].endswith("+") and cells[1] != "op":
                ops.add(cells[1])
    # Ops binding replaces (no table family of their own row checks here).
    return ops | {"Constant", "Shape", "Dropout", "Identity"}


def model_facts(path):
    import onnx
    proto = onnx.load(path, load_external_data=False)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    ops = sorted({(n.domain + "::" if n.domain not in ("", "ai.onnx") else "") + n.op_type
                  for n in proto.graph.node})
    return dict(ir_version=proto.ir_version, opset=opset, ops=ops,
                gemm_dtypes=gemm_dtypes(proto))


def gemm_dtypes(proto):
    """How many of the file's MatMul, Gemm and Conv nodes compute in each
    dtype, by ONNX shape inference: what an export computes in as written.
    (PyTorch's TorchScript exporter writes a .half() transformer's GEMMs in
    float32 after its first LayerNorm: a float32 model as written.)"""
    import collections
    import onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # recorded as unknown, not fatal
        return {}
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    counts = collections.Counter(
        onnx.helper.tensor_dtype_to_np_dtype(types[n.output[0]]).name
        for n in inferred.graph.node
        if n.op_type in ("MatMul", "Gemm", "Conv") and types.get(n.output[0]))
    return dict(counts)


def capture_torch_graph(model, inputs):
    """PyTorch's CUDA graph of the model on `inputs` (copied to the GPU, kept
    alive with the graph): three warm-up runs on a side stream, then capture."""
    static = [t.cuda() for t in inputs]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):
            model(*static)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        model(*static)
    graph.static_inputs = static
    return graph


def time_torch_graph(model, inputs, iters=200):
    """Median replay of PyTorch's CUDA graph of the model, microseconds."""
    graph = capture_torch_graph(model, inputs)
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return float(np.median(times))


def time_torch_eager(model, inputs, iters=50):
    """Median latency of the model run eagerly by PyTorch, microseconds: the
    anchor for a model PyTorch cannot capture into a CUDA graph."""
    static = [t.cuda() for t in inputs]
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.no_grad():
        for _ in range(3):
            model(*static)
        for _ in range(iters):
            start.record()
            model(*static)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000)
    return float(np.median(times))


def time_torch_compiled(model, inputs, iters=100):
    """Median latency of torch.compile(mode="reduce-overhead") of the model,
    microseconds: the stronger anchor (Inductor's fused kernels, CUDA graphs
    by cudagraph trees). Each call is timed whole, as a user calls it."""
    torch._dynamo.reset()
    compiled = torch.compile(model, mode="reduce-overhead")
    static = [t.cuda() for t in inputs]
    with torch.no_grad():
        for _ in range(5):  # compile, record, then replays
            compiled(*static)
        torch.cuda.synchronize()
        times = []
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(iters):
            start.record()
            compiled(*static)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000)
    return float(np.median(times))


class Autocast(torch.nn.Module):
    """The float32 model as PyTorch's automatic mixed precision runs it
    (torch.autocast, float16): the anchor issue 28 names for our `auto`.
    The weight-cast cache is off, as torch.cuda.graph requires, so a replay
    casts the weights as every autocast call does."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        with torch.autocast("cuda", dtype=torch.float16, cache_enabled=False):
            return self.model(*inputs).float()


def run(cmd, log, timeout=600):
    log.write("+ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    log.write(proc.stdout[-4000:] + proc.stderr[-4000:] + "\n")
    log.flush()
    return proc


def probe(name, exporter, args, ops_known, log):
    spec = model_spec(name)
    dtype, torch_dtype, served = PRECISIONS[args.precision]
    row = dict(model=name, exporter=exporter, precision=args.precision)
    torch.manual_seed(0)
    model = wrap(spec["build"](), spec["kind"])
    if args.settle_norms:
        settle_norm_statistics(model, spec["kind"])
    model = model.to(dtype)
    # PyTorch in the precision we serve in: the exported model itself, or
    # (a precision of our config) its copy cast as users cast it.
    torch_model = model if torch_dtype == dtype else copy.deepcopy(model).to(torch_dtype)
    os.makedirs(args.work, exist_ok=True)
    stem = name.replace(":", "_")  # tv:NAME, timm:NAME
    tag = f"{stem}_{exporter}_{args.precision}" + ("_dynseq" if args.dynamic_sequence else "")
    if args.opset:
        tag += f"_opset{args.opset}"
    path = os.path.join(args.work, f"{tag}.onnx")
    t0 = time.time()
    try:
        export(model, spec["kind"], path, exporter, dtype, args.dynamic_sequence, args.opset)
    except Exception as error:  # recorded, not fatal
        row["stage"] = "export"
        # The exporters' first lines are banners; the cause is at the end.
        lines = [l for l in str(error).splitlines() if l.strip()]
        row["error"] = f"{type(error).__name__}: {' | '.join(lines[-3:])[:400]}"
        log.write(traceback.format_exc())
        return row
    row["export_s"] = round(time.time() - t0, 1)
    try:
        facts = model_facts(path)
        row.update(ir_version=facts["ir_version"], opset=facts["opset"],
                   gemm_dtypes=facts["gemm_dtypes"])
        row["missing_ops"] = [op for op in facts["ops"] if op not in ops_known]
        # The ops whose presence tells which path an export took.
        row["notable_ops"] = [op for op in facts["ops"] if op in NOTABLE_OPS]
    except Exception as error:
        row["facts_error"] = str(error)[:200]

    batches = [int(b) for b in args.batch_sizes.split(",")]
    names = input_names(spec["kind"])
    inputs_dir = os.path.join(args.work, f"{tag}_in")
    outputs_dir = os.path.join(args.work, f"{tag}_out")
    graph_dir = os.path.join(args.work, f"{tag}_graph")
    reference = {}
    torch_err = {}  # PyTorch's own error in the precision served
    torch_same = {}  # PyTorch's outputs in that precision
    # The reference runs the exported weights (rounded to the model's type)
    # in float64.
    model64 = wrap(spec["build"](), spec["kind"])
    model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    model64 = model64.double().cuda()
    for batch in batches:
        inputs = make_inputs(spec["kind"], batch, 100 + batch, dtype)
        os.makedirs(os.path.join(inputs_dir, str(batch)), exist_ok=True)
        for n, t in zip(names, inputs):
            np.save(os.path.join(inputs_dir, str(batch), n + ".npy"), t.numpy())
        with torch.no_grad():
            cast = [t.double() if t.is_floating_point() else t for t in inputs]
            reference[batch] = model64(*[t.cuda() for t in cast]).double().cpu().numpy()
            # PyTorch's own error in the precision served: how well conditioned
            # the model is (a detector's top-k query selection may pick other
            # queries in float32 than in float64, with any runtime).
            own = torch_model.cuda()(*[t.cuda().to(torch_dtype) if t.is_floating_point()
                                       else t.cuda() for t in inputs])
            own = own.double().cpu().numpy()
            torch_same[batch] = own
            torch_err[batch] = float(np.linalg.norm(own - reference[batch]) /
                                     max(np.linalg.norm(reference[batch]), 1e-300))
    if torch_err:
        row["torch_rel_err"] = torch_err
    json_path = os.path.join(args.work, f"{tag}.json")
    bucket = []
    if args.dynamic_sequence and spec["kind"].startswith("text"):
        bucket = ["--bucket", str(SEQ)]  # the one shape dim, captured at the inputs' length
    proc = run([os.path.join(args.bin, "runtime_bench"), "--model", path, "--batch-sizes",
                args.batch_sizes, "--inputs", inputs_dir, "--outputs", outputs_dir,
                "--graph-outputs", graph_dir, "--iters", str(args.iters), "--json", json_path]
               + bucket + ["--precision", served, "--reference"] + args.runtime_flags.split(), log)
    if proc.returncode != 0:
        row["stage"] = "graphserve"
        lines = [l for l in (proc.stderr + proc.stdout).splitlines() if l.strip()]
        row["error"] = " | ".join(lines[-3:])[:600]
        return row
    records = {r["batch"]: r for r in json.load(open(json_path))}
    row["rel_err"] = {}
    row["graph_us"] = {}
    for batch in batches:
        got = np.load(os.path.join(graph_dir, str(batch), "y.npy")).astype(np.float64)
        want = reference[batch]
        row["rel_err"][batch] = float(np.linalg.norm(got - want) / max(np.linalg.norm(want),
                                                                       1e-300))
        row["graph_us"][batch] = records[batch]["graph_compute_us"]
        # Against PyTorch in the same precision: where both are far from
        # float64, whether they are far from each other.
        row.setdefault("rel_err_vs_torch_same_precision", {})[batch] = float(
            np.linalg.norm(got - torch_same[batch]) /
            max(np.linalg.norm(torch_same[batch]), 1e-300))
    row["capture_ms"] = {b: records[b].get("capture_ms") for b in batches}
    # Against the independent reference of the load-time check (Note [An
    # independent reference]): the data its tolerances are set from.
    row["reference_rel_err"] = {b: records[b].get("reference_rel_err") for b in batches}
    model_cuda = torch_model.cuda()
    row["torch_graph_us"] = {}
    for batch in [b for b in batches if b in TIMED_BATCHES]:
        try:
            row["torch_graph_us"][batch] = time_torch_graph(
                model_cuda, make_inputs(spec["kind"], batch, 100 + batch, torch_dtype))
        except Exception as error:
            # A model PyTorch cannot capture (a host copy inside, as RT-DETR's
            # anchors): its eager time is the anchor left, labelled so.
            row["torch_graph_error"] = str(error)[:200]
            row.setdefault("torch_eager_us", {})[batch] = time_torch_eager(
                model_cuda, make_inputs(spec["kind"], batch, 100 + batch, torch_dtype))
        if args.autocast_anchor:
            try:
                autocast = Autocast(model.cuda())
                row.setdefault("autocast_graph_us", {})[batch] = time_torch_graph(
                    autocast, make_inputs(spec["kind"], batch, 100 + batch, dtype))
                with torch.no_grad():
                    got = autocast(*[t.cuda() for t in make_inputs(spec["kind"], batch,
                                                                   100 + batch, dtype)])
                want = reference[batch]
                row.setdefault("autocast_rel_err", {})[batch] = float(
                    np.linalg.norm(got.double().cpu().numpy() - want) /
                    max(np.linalg.norm(want), 1e-300))
            except Exception as error:
                row["autocast_error"] = str(error)[:200]
        if args.compile_anchor:
            try:
                row.setdefault("torch_compile_us", {})[batch] = time_torch_compiled(
                    model_cuda, make_inputs(spec["kind"], batch, 100 + batch, torch_dtype))
            except Exception as error:
                row["torch_compile_error"] = str(error)[:200]
    row["stage"] = "ok"
    return row


def render(rows):
    lines = ["| model | exporter | precision | IR/opset | result | rel err vs PyTorch f64 "
             "(batch: ours [PyTorch's own]) | our replay / PyTorch graph (same precision) "
             "| rel err vs the load check's reference |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ir = f"{r.get('ir_version', '?')}/{r.get('opset', '?')}"
        if r.get("stage") == "ok":
            own = r.get("torch_rel_err", {})
            errs = ", ".join(f"{b}: {e:.1e}" + (f" [{own[b]:.1e}]" if b in own else "")
                             for b, e in r["rel_err"].items())
            ratios = ", ".join(
                f"b{b}: {r['graph_us'][b]:.0f}/{t:.0f} us = {r['graph_us'][b] / t:.2f}x"
                for b, t in r.get("torch_graph_us", {}).items())
            autocast = r.get("autocast_graph_us", {})
            if autocast:
                autocast_err = r.get("autocast_rel_err", {})
                ratios += "; vs autocast's graph: " + ", ".join(
                    f"b{b}: {r['graph_us'][b]:.0f}/{t:.0f} us = {r['graph_us'][b] / t:.2f}x"
                    + (f" (its err {autocast_err[b]:.1e})" if b in autocast_err else "")
                    for b, t in autocast.items())
            eager = r.get("torch_eager_us", {})
            if eager:
                ratios += ("; PyTorch cannot capture it, vs its eager run: " if not ratios
                           else "; vs eager: ") + ", ".join(
                    f"b{b}: {r['graph_us'][b]:.0f}/{t:.0f} us = {r['graph_us'][b] / t:.2f}x"
                    for b, t in eager.items())
            compiled = r.get("torch_compile_us", {})
            if compiled:
                ratios += "; vs torch.compile: " + ", ".join(
                    f"b{b}: {r['graph_us'][b]:.0f}/{t:.0f} us = {r['graph_us'][b] / t:.2f}x"
                    for b, t in compiled.items())
            result = "served"
            if r.get("gemm_dtypes"):
                result += " (GEMMs as written: " + ", ".join(
                    f"{n} {dtype}" for dtype, n in sorted(r["gemm_dtypes"].items())) + ")"
            checked = ", ".join(f"{b}: {e:.1e}" for b, e in
                                r.get("reference_rel_err", {}).items() if e is not None)
        else:
            errs, ratios, checked = "-", "-", "-"
            result = f"{r.get('stage')}: {r.get('error', '')}"
            if r.get("missing_ops"):
                result += f" (ops not in the registry: {', '.join(r['missing_ops'])})"
        lines.append(f"| {r['model']} | {r['exporter']} | {r.get('precision', 'fp32')} | {ir} | "
                     f"{result} | {errs} | {ratios} | {checked or '-'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="folder holding runtime_bench")
    parser.add_argument("--work", required=True, help="scratch folder")
    parser.add_argument("--out", required=True, help="folder for model_zoo.md and .json")
    parser.add_argument("--models", default=",".join(MODELS),
                        help="comma-separated names of MODELS, or tv:NAME / timm:NAME for any "
                             "torchvision or timm image model, or bench:NAME for a model of "
                             "bench/export_models.py (" + ",".join(export_models.SPECS) + ")")
    parser.add_argument("--exporters", default="ts,dynamo",
                        help="comma-separated: ts, dynamo, newest (dynamo's export at the "
                             "installed onnx's newest opset and IR version)")
    parser.add_argument("--batch-sizes", default="1,3,8")
    parser.add_argument("--iters", default="50")
    parser.add_argument("--precision", default="fp32", choices=sorted(PRECISIONS),
                        help="fp16: export and run the model in half precision (model.half()); "
                             "tf32: the float32 model with TF32 GEMMs and convolutions on both "
                             "sides (runtime_bench --precision tf32, PyTorch's allow_tf32); "
                             "fp16-config, bf16-config, auto-config: the float32 export served "
                             "in fp16, bf16 or auto by our precision pass (config.pbtxt's "
                             "capture.precision), against PyTorch's model.half() or "
                             "model.bfloat16(); fp16-half-config: the model.half() export "
                             "served in fp16 by the pass, which converts what the export left "
                             "in float32")
    parser.add_argument("--opset", type=int, default=None,
                        help="the dynamo exporter's opset (its default when omitted); 23 makes "
                             "it write Attention and RMSNormalization where the model has them")
    parser.add_argument("--compile-anchor", action="store_true",
                        help="also time torch.compile(mode='reduce-overhead') of the model at "
                             "batch 1, 8, 16 and 64 (the stronger anchor; compiles take minutes)")
    parser.add_argument("--autocast-anchor", action="store_true",
                        help="also time PyTorch's CUDA graph of the float32 model under "
                             "torch.autocast(float16) at the timed batches, with its error "
                             "against float64: the anchor for --precision auto-config")
    parser.add_argument("--runtime-flags", default="",
                        help="more runtime_bench flags, space-separated (e.g. "
                             "--own-depthwise-convs=false), for a same-run comparison")
    parser.add_argument("--settle-norms", action="store_true",
                        help="set BatchNorm statistics from random batches before export "
                             "(settle_norm_statistics), so that a CNN's activations have a "
                             "trained model's scale, not initialisation's")
    parser.add_argument("--dynamic-sequence", action="store_true",
                        help="export text models with the sequence dim dynamic too, and "
                             "capture them at the inputs' length (a shape bucket)")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ops_known = registry_ops(repo)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    with open(os.path.join(args.out, "model_zoo.log"), "w") as log:
        for name in args.models.split(","):
            for exporter in args.exporters.split(","):
                try:
                    with _mha_fastpath_restored():
                        row = probe(name, exporter, args, ops_known, log)
                except Exception as error:
                    row = dict(model=name, exporter=exporter, stage="probe",
                               error=f"{type(error).__name__}: {str(error)[:300]}")
                    log.write(traceback.format_exc())
                rows.append(row)
                print(json.dumps(row), flush=True)
                torch.cuda.empty_cache()
                write_results(rows, args.out)  # after each model: a cut-off run keeps them
    print(render(rows))
    return 0


@contextlib.contextmanager
def _mha_fastpath_restored():
    """Restores PyTorch's MHA fast-path setting on exit: a bench model's build
    turns it off, and the models probed after it (torchvision's ViT has
    nn.MultiheadAttention) run as they run alone."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None or not hasattr(mha, "get_fastpath_enabled"):
        yield
        return
    enabled = mha.get_fastpath_enabled()
    try:
        yield
    finally:
        mha.set_fastpath_enabled(enabled)


def write_results(rows, out):
    with open(os.path.join(out, "model_zoo.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(out, "model_zoo.md"), "w") as f:
        f.write(render(rows))


if __name__ == "__main__":
    sys.exit(main())
