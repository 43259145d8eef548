#!/usr/bin/env python3
"""The runtime benchmark's models: defined in PyTorch, exported to ONNX.

Each model is built with a fixed seed so that every run of this script (and
bench/run_runtime_bench.py, which imports it) makes the same weights. Three
are exported by default:

  mlp         x [B,512] -> y [B,1]: Linear 512-1024-512-256-1, ReLU between,
              Sigmoid out.
  dlrm_dense  dense [B,13], sparse_emb [B,26,16] -> prob [B,1]: DLRM's dense
              part (bottom MLP, pairwise dot-product interaction, top MLP),
              the embedding lookups left to the caller.
  encoder     x [B,16,256] -> y [B,16,256]: 4 nn.TransformerEncoderLayer
              (d_model 256, 4 heads, FFN 1024, GELU, batch_first, dropout 0).

and four torchvision CNNs (weights=None: seeded random weights, no download),
each x [B,3,H,W] -> y [B,1000] logits, exported when asked for (--models cnn):

  resnet50         224x224.
  inception_v3     299x299; aux_logits=False, init_weights=True,
                   transform_input=False.
  mobilenet_v2     224x224 (ReLU6 exports as Clip).
  efficientnet_b0  224x224 (SiLU exports as Sigmoid * x).

Every BatchNorm of a CNN gets seeded random running statistics and affine
parameters (a fresh torchvision model has mean 0, variance 1, scale 1, shift
0, which makes eval-mode BatchNorm nearly the identity, and the bias the
exporter folds from it into the Conv before it zero).

Export uses the TorchScript exporter (dynamo=False, opset 17, constant
folding) with the batch dim dynamic on every input and output. Each exported
model's op types are printed, with any that GraphServe's runtime does not
support (runtime/op_list.cc).

Usage: python3 bench/export_models.py --out DIR [--models LIST]
  writes DIR/<name>.onnx; LIST is comma-separated model names and groups:
  "default" (mlp,dlrm_dense,encoder, what no --models exports), "cnn" (the
  four CNNs), "all".
"""

import argparse
import inspect
import os
import sys

import torch
from torch import nn

OPSET = 17

# runtime/op_list.cc: the ONNX ops GraphServe executes.
SUPPORTED_OPS = frozenset(
    "Abs Add Cast Concat Constant Div Equal Erf Exp Expand Flatten Gather Gemm "
    "Identity LayerNormalization LeakyRelu Log MatMul Max Min Mul Neg Pow ReduceMean "
    "Relu Reshape Shape Sigmoid Slice Softmax Sqrt Squeeze Sub Tanh Transpose "
    "Unsqueeze Where".split()
)

# The default set: what export_all and run_runtime_bench.py take without
# --models.
MODEL_NAMES = ("mlp", "dlrm_dense", "encoder")
CNN_NAMES = ("resnet50", "inception_v3", "mobilenet_v2", "efficientnet_b0")
# Fixed order: run_runtime_bench.py seeds each model's inputs with its index
# here, so new models go at the end.
ALL_MODEL_NAMES = MODEL_NAMES + CNN_NAMES
MODEL_GROUPS = {"default": MODEL_NAMES, "cnn": CNN_NAMES, "all": ALL_MODEL_NAMES}


def _disable_mha_fastpath():
    # The fast path replaces TransformerEncoderLayer's forward with one fused
    # native op (and nested tensors) in eval mode; the exporter must see the
    # plain ops, and the eager timing compares the same computation.
    if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
        torch.backends.mha.set_fastpath_enabled(False)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(512, 1024), nn.ReLU(),
            nn.Linear(1024, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 1), nn.Sigmoid(),
        )

    def forward(self, x):
        return self.layers(x)


class DlrmDense(nn.Module):
    """DLRM (Naumov et al. 2019) without its embedding tables: the caller
    passes the 26 looked-up embeddings."""

    NUM_DENSE = 13
    NUM_SPARSE = 26
    EMBEDDING_DIM = 16

    def __init__(self):
        super().__init__()
        # ReLU after every bottom layer, as in the reference DLRM.
        self.bottom = nn.Sequential(
            nn.Linear(self.NUM_DENSE, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, self.EMBEDDING_DIM), nn.ReLU(),
        )
        features = self.NUM_SPARSE + 1
        pairs = features * (features - 1) // 2  # 351
        self.top = nn.Sequential(
            nn.Linear(self.EMBEDDING_DIM + pairs, 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 1), nn.Sigmoid(),
        )
        # The strictly lower triangle of the [27,27] interaction matrix as
        # flat indices: Z.flatten(1) then index_select exports to Flatten +
        # Gather on a constant, where Z[:, li, lj] would export to a chain of
        # index arithmetic.
        flat = [i * features + j for i in range(features) for j in range(i)]
        self.register_buffer("pair_index", torch.tensor(flat, dtype=torch.int64), persistent=False)

    def forward(self, dense, sparse_emb):
        bottom = self.bottom(dense)                                 # [B,16]
        t = torch.cat([bottom.unsqueeze(1), sparse_emb], dim=1)     # [B,27,16]
        z = torch.bmm(t, t.transpose(1, 2))                         # [B,27,27]
        pairs = torch.index_select(z.flatten(1), 1, self.pair_index)  # [B,351]
        return self.top(torch.cat([bottom, pairs], dim=1))          # [B,1]


class Encoder(nn.Module):
    D_MODEL = 256
    SEQ_LEN = 16

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            d_model=self.D_MODEL, nhead=4, dim_feedforward=1024, dropout=0.0,
            activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
        # TransformerEncoder deep-copies `layer`, so the four layers start out
        # identical, with zero biases and unit LayerNorm scales. Draw each
        # parameter afresh so that every layer, bias and scale matters.
        with torch.no_grad():
            for name, parameter in self.named_parameters():
                if "norm" in name and name.endswith("weight"):
                    parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))
                elif name.endswith("bias"):
                    parameter.copy_(0.05 * torch.randn_like(parameter))
                else:
                    fan_in = parameter.shape[-1]
                    parameter.copy_(torch.randn_like(parameter) / fan_in ** 0.5)

    def forward(self, x):
        return self.encoder(x)


def _randomize_batch_norm(model):
    """Draws every BatchNorm's running statistics and affine parameters from
    the global (seeded) generator, so that eval-mode BatchNorm, folded into
    the Conv before it by the exporter, scales and shifts each channel
    differently."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
                module.running_mean.copy_(0.1 * torch.randn_like(module.running_mean))
                module.running_var.copy_(torch.empty_like(module.running_var).uniform_(0.5, 1.5))
                if module.affine:
                    module.weight.copy_(1.0 + 0.1 * torch.randn_like(module.weight))
                    module.bias.copy_(0.1 * torch.randn_like(module.bias))
    return model


def _torchvision_cnn(name, **kwargs):
    """A builder of torchvision.models.<name>(weights=None, **kwargs) with
    random BatchNorm statistics; torchvision is imported only when a CNN is
    built, so the other models need only torch."""

    def build():
        import torchvision
        return _randomize_batch_norm(getattr(torchvision.models, name)(weights=None, **kwargs))

    return build


class ModelSpec:
    """A benchmark model: how to build it, and its ONNX interface."""

    def __init__(self, name, seed, build, inputs, output_names):
        self.name = name
        self.seed = seed
        self._build = build
        # (name, shape without the batch dim) per input, all float32.
        self.inputs = inputs
        self.output_names = output_names

    @property
    def input_names(self):
        return [name for name, _ in self.inputs]

    def build(self):
        """A fresh float32 CPU module in eval mode, with this spec's weights."""
        _disable_mha_fastpath()
        torch.manual_seed(self.seed)
        return self._build().eval()

    def example_inputs(self, batch):
        generator = torch.Generator().manual_seed(self.seed)
        return tuple(torch.randn((batch, *shape), generator=generator) for _, shape in self.inputs)


SPECS = {
    "mlp": ModelSpec("mlp", 1, Mlp, [("x", (512,))], ["y"]),
    "dlrm_dense": ModelSpec(
        "dlrm_dense", 2, DlrmDense,
        [("dense", (DlrmDense.NUM_DENSE,)),
         ("sparse_emb", (DlrmDense.NUM_SPARSE, DlrmDense.EMBEDDING_DIM))],
        ["prob"]),
    "encoder": ModelSpec(
        "encoder", 3, Encoder, [("x", (Encoder.SEQ_LEN, Encoder.D_MODEL))], ["y"]),
    "resnet50": ModelSpec(
        "resnet50", 4, _torchvision_cnn("resnet50"), [("x", (3, 224, 224))], ["y"]),
    "inception_v3": ModelSpec(
        "inception_v3", 5,
        _torchvision_cnn("inception_v3", aux_logits=False, init_weights=True,
                         transform_input=False),
        [("x", (3, 299, 299))], ["y"]),
    "mobilenet_v2": ModelSpec(
        "mobilenet_v2", 6, _torchvision_cnn("mobilenet_v2"), [("x", (3, 224, 224))], ["y"]),
    "efficientnet_b0": ModelSpec(
        "efficientnet_b0", 7, _torchvision_cnn("efficientnet_b0"), [("x", (3, 224, 224))], ["y"]),
}
assert tuple(SPECS) == ALL_MODEL_NAMES


def resolve_models(text):
    """Model names from a comma-separated list of names and MODEL_GROUPS keys,
    in order, without repeats; ValueError naming any unknown entry."""
    names = []
    unknown = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        if entry in MODEL_GROUPS:
            names.extend(MODEL_GROUPS[entry])
        elif entry in SPECS:
            names.append(entry)
        else:
            unknown.append(entry)
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}; known: {list(SPECS)}, "
                         f"groups: {list(MODEL_GROUPS)}")
    return list(dict.fromkeys(names))


def export(spec, path):
    """Exports spec's model to `path` (ONNX, batch dim dynamic)."""
    model = spec.build()
    names = spec.input_names + spec.output_names
    kwargs = dict(
        input_names=spec.input_names,
        output_names=spec.output_names,
        dynamic_axes={name: {0: "batch"} for name in names},
        opset_version=OPSET,
        do_constant_folding=True,
    )
    # Newer PyTorch defaults to the dynamo exporter; older has no such argument.
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if has_dynamo:
        kwargs["dynamo"] = False
    # Traced at batch 3: a batch of 1 lets the tracer treat the batch dim as
    # broadcastable.
    with torch.no_grad():
        try:
            torch.onnx.export(model, spec.example_inputs(3), path, **kwargs)
        except Exception as error:  # e.g. a PyTorch without the TorchScript exporter
            if not has_dynamo:
                raise
            print(f"WARNING: the TorchScript exporter failed on {spec.name} ({error!r}); "
                  f"trying the dynamo exporter, whose graphs use other ops", flush=True)
            kwargs["dynamo"] = True
            torch.onnx.export(model, spec.example_inputs(3), path, **kwargs)


# --- Op types of an exported file, with or without the onnx package. ---

def _read_varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(data):
    """(field number, wire type, value) of a serialized protobuf message; a
    length-delimited value is a memoryview."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 2:
            length, pos = _read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
        yield number, wire_type, value


def _op_types_without_onnx(path):
    # onnx.proto: ModelProto.graph = 7; GraphProto.node = 1;
    # NodeProto.op_type = 4, NodeProto.domain = 7. Top-level nodes only.
    with open(path, "rb") as f:
        data = memoryview(f.read())
    ops = set()
    for number, wire_type, graph in _fields(data):
        if number != 7 or wire_type != 2:
            continue
        for node_number, node_wire, node in _fields(graph):
            if node_number != 1 or node_wire != 2:
                continue
            op_type, domain = "", ""
            for field, field_wire, value in _fields(node):
                if field == 4 and field_wire == 2:
                    op_type = bytes(value).decode()
                elif field == 7 and field_wire == 2:
                    domain = bytes(value).decode()
            ops.add(f"{domain}::{op_type}" if domain not in ("", "ai.onnx") else op_type)
    return ops


def op_types(path):
    """The op types of the top-level graph ("domain::Op" outside ONNX's)."""
    try:
        import onnx
    except ImportError:
        return _op_types_without_onnx(path)
    model = onnx.load(path, load_external_data=False)
    return {node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
            for node in model.graph.node}


def export_all(out_dir, names=MODEL_NAMES):
    """Exports the named models into out_dir; returns {name: path}. Prints
    each model's op types and any outside SUPPORTED_OPS."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name in names:
        path = os.path.join(out_dir, f"{name}.onnx")
        export(SPECS[name], path)
        ops = op_types(path)
        unsupported = sorted(ops - SUPPORTED_OPS)
        print(f"{name}: {path} ({os.path.getsize(path)} bytes)")
        print(f"  op types: {' '.join(sorted(ops))}")
        if unsupported:
            print(f"  NOT SUPPORTED by runtime/op_list.cc: {' '.join(unsupported)}")
        paths[name] = path
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory for <name>.onnx")
    parser.add_argument("--models", default="default",
                        help="comma-separated names of " + ",".join(SPECS) + " and groups "
                             + ",".join(MODEL_GROUPS) + " (default: " + ",".join(MODEL_NAMES) + ")")
    args = parser.parse_args()
    try:
        names = resolve_models(args.models)
    except ValueError as error:
        parser.error(str(error))
    if not names:
        parser.error("--models names no model")
    print(f"torch {torch.__version__}, opset {OPSET}")
    export_all(args.out, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
