#!/usr/bin/env python3
"""An exported model's structure, small enough to bring back from the GPU
machine, for reading where an export computes in which type (issue 28).

  onnx_structure.py summary MODEL.onnx
      Ops by (op type, output dtype) after ONNX shape inference, and each
      Cast by (source dtype -> target dtype, producer op -> reader ops).
  onnx_structure.py strip MODEL.onnx OUT.onnx
      A copy whose large initializers keep their name, type and dims only.
  onnx_structure.py refill STRIPPED.onnx OUT.onnx
      The stripped copy with seeded random values in place of the weights
      (small normal values for floats, zeros for integers), so that it loads.
"""
import argparse
import collections
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

STRIP_BYTES = 4096  # initializers at most this size keep their values (shapes, axes)


def value_types(model):
    inferred = shape_inference.infer_shapes(model)
    types = {}
    for v in list(inferred.graph.input) + list(inferred.graph.value_info) + list(
            inferred.graph.output):
        types[v.name] = v.type.tensor_type.elem_type
    for init in inferred.graph.initializer:
        types[init.name] = init.data_type
    return types


def type_name(elem_type):
    return helper.tensor_dtype_to_string(elem_type).replace("TensorProto.", "") if elem_type else "?"


def summary(path):
    model = onnx.load(path)
    types = value_types(model)
    producer = {out: node.op_type for node in model.graph.node for out in node.output}
    readers = collections.defaultdict(list)
    for node in model.graph.node:
        for name in node.input:
            readers[name].append(node.op_type)
    ops = collections.Counter()
    casts = collections.Counter()
    for node in model.graph.node:
        out = node.output[0] if node.output else ""
        ops[(node.op_type, type_name(types.get(out)))] += 1
        if node.op_type == "Cast":
            source = node.input[0]
            casts[(type_name(types.get(source)), type_name(types.get(out)),
                   producer.get(source, "input/initializer"),
                   ",".join(sorted(set(readers[out]))))] += 1
    print(f"== {path}: {len(model.graph.node)} nodes")
    for (op, dtype), n in sorted(ops.items(), key=lambda kv: -kv[1]):
        print(f"{n:5d}  {op:24s} -> {dtype}")
    print("== Casts: count  source -> target  (producer -> readers)")
    for (src, dst, prod, read), n in sorted(casts.items(), key=lambda kv: -kv[1]):
        print(f"{n:5d}  {src} -> {dst}  ({prod} -> {read})")


def strip(path, out):
    model = onnx.load(path)
    for init in model.graph.initializer:
        if len(init.SerializeToString()) > STRIP_BYTES:
            dims, dtype, name = list(init.dims), init.data_type, init.name
            init.Clear()
            init.name, init.data_type = name, dtype
            init.dims.extend(dims)
            init.doc_string = "stripped"
    onnx.save(model, out)


def refill(path, out):
    model = onnx.load(path)
    rng = np.random.default_rng(0)
    for k, init in enumerate(model.graph.initializer):
        if init.doc_string != "stripped":
            continue
        dtype = helper.tensor_dtype_to_np_dtype(init.data_type)
        dims = list(init.dims)
        if np.issubdtype(dtype, np.floating):
            values = (rng.standard_normal(dims) * 0.02).astype(dtype)
        else:
            values = np.zeros(dims, dtype)
        model.graph.initializer[k].CopyFrom(numpy_helper.from_array(values, init.name))
    onnx.save(model, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("summary").add_argument("model")
    for name in ("strip", "refill"):
        p = sub.add_parser(name)
        p.add_argument("model")
        p.add_argument("out")
    args = parser.parse_args()
    if args.command == "summary":
        summary(args.model)
    elif args.command == "strip":
        strip(args.model, args.out)
    else:
        refill(args.model, args.out)


if __name__ == "__main__":
    sys.exit(main())
