#!/usr/bin/env python3
"""Writes the node tests of the installed onnx package as a node-test folder.

PyPI's onnx wheels carry each node test's definition (model and data made by
onnx's own numpy reference) but not the serialized files Debian's
libonnx-testdata ships for onnx 1.12. This writes them in that layout,
DIR/<test>/model.onnx and DIR/<test>/test_data_set_<i>/{input,output}_<j>.pb,
so tests/onnx_conformance reads the newer opsets' tests the same way.

    python3 tests/make_onnx_node_tests.py DIR
"""

import argparse
import os
import shutil
import sys
import warnings


def write_case(case, out_dir):
    from onnx import numpy_helper, TensorProto

    os.makedirs(out_dir)
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(out_dir, f"test_data_set_{i}")
        os.makedirs(data_dir)
        for kind, values, declared in (("input", inputs, graph.input),
                                       ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                if not declared[j].type.HasField("tensor_type"):
                    return False  # sequences, maps, optionals: no tensor to write
                proto = value if isinstance(value, TensorProto) else \
                    numpy_helper.from_array(value, declared[j].name)
                with open(os.path.join(data_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(proto.SerializeToString())
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write (replaced)")
    args = parser.parse_args()
    import onnx
    from onnx.backend.test.case import node

    warnings.simplefilter("ignore")  # the reference's own overflow warnings
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    written = skipped = 0
    for case in node.collect_testcases(None):
        out_dir = os.path.join(args.out, case.name)
        if write_case(case, out_dir):
            written += 1
        else:
            shutil.rmtree(out_dir)
            skipped += 1
    print(f"onnx {onnx.__version__}: {written} node tests written to {args.out}, "
          f"{skipped} without tensor inputs and outputs left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
