"""Per-model precision served by the real graphserve binary on the host
executor, seen from Triton's Python client.

One float32 ONNX transformer block (attention with Softmax, a residual Add,
LayerNormalization, an MLP with PyTorch's exact GELU chain, Tanh) in five
repository entries: without a precision, with capture { precision: "fp16" },
with "bf16", with "auto", and with an unknown "fp8"; and a "loud" model with
a bias of 7e4 (past float16's 65504) under "auto". Expected of the server
(runtime/passes/precision.h, Note [Model precision]; autocast.h, Note
[Automatic precision]):
  - each model answers float32, its declared type, with the declared
    metadata, whatever it computes in;
  - fp16, bf16 and auto within 1e-2, 5e-2 and 1e-2 (relative, over the
    whole output) of onnxruntime's float32 run of the same file, and not
    equal to the float32 model's answer (the model really ran in 16 bits);
  - the loud model under auto within 1e-2 of onnxruntime: its bias node and
    the node reading its 7e4 stay float32, which the load log says with why;
  - the startup table's PRECISION column says what each model computes in;
  - the fp8 entry fails to load, saying capture.precision and the choices,
    while the others serve (--exit-on-error=false).

    bazel test //tests:precision_serving_test \
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

A failing assertion whose message starts with "SERVER:" names the model,
what was expected and what came back.
"""

import os
import sys
import unittest

import numpy as np
import onnx
import tritonclient.grpc as grpcclient
from onnx import TensorProto, helper, numpy_helper

import graphserve_process as gp

TOKENS, HIDDEN, INNER = 4, 8, 16
ROWS = 3  # padded up to the captured size 4
# ||served - onnxruntime's float32|| / ||onnxruntime's||: the 16-bit type's
# rounding of weights and activations through three GEMM layers (float16
# keeps 11 significant bits, bfloat16 8); the pass's unit test measures
# 6e-4 and 6e-3 on its own block.
TOLERANCE = {"fp16": 1e-2, "bf16": 5e-2, "auto": 1e-2}
# Past float16's largest finite value, 65504: fp16 would make it infinite.
LOUD_BIAS = 7e4

SERVER_BINARY = MAKE_REPOSITORY = None


def transformer_block():
    """The float32 block: outputs y [B, TOKENS, HIDDEN] and the attention
    probabilities p [B, TOKENS, TOKENS]."""
    rng = np.random.default_rng(5)

    def weight(name, shape, scale):
        values = (rng.standard_normal(shape) * scale).astype(np.float32)
        return numpy_helper.from_array(values, name)

    def scalar(name, value):
        return helper.make_node("Constant", [], [name], value_float=value)

    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        scalar("scale", 1.0 / np.sqrt(HIDDEN)),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "x"], ["a"]),
        helper.make_node("Add", ["a", "x"], ["r"]),
        helper.make_node("LayerNormalization", ["r", "gamma", "beta"], ["ln"], axis=-1,
                         epsilon=1e-5),
        helper.make_node("MatMul", ["ln", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        scalar("sqrt2", float(np.sqrt(2.0))),
        helper.make_node("Div", ["hb", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        scalar("one", 1.0),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["hb", "e1"], ["m"]),
        scalar("half", 0.5),
        helper.make_node("Mul", ["m", "half"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["o"]),
        helper.make_node("Add", ["o", "b2"], ["ob"]),
        helper.make_node("Tanh", ["ob"], ["y"]),
    ]
    initializers = [
        weight("wq", (HIDDEN, HIDDEN), 0.35), weight("wk", (HIDDEN, HIDDEN), 0.35),
        weight("w1", (HIDDEN, INNER), 0.35), weight("b1", (INNER,), 0.1),
        weight("w2", (INNER, HIDDEN), 0.25), weight("b2", (HIDDEN,), 0.1),
        weight("gamma", (HIDDEN,), 0.2), weight("beta", (HIDDEN,), 0.1),
    ]
    graph = helper.make_graph(
        nodes, "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", TOKENS, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", TOKENS, HIDDEN]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, ["batch", TOKENS, TOKENS])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def loud_block():
    """x [B, TOKENS, HIDDEN] -> y: a MatMul in range, plus a column biased by
    LOUD_BIAS and scaled back by 1e-4 (auto keeps both of those in float32)."""
    rng = np.random.default_rng(6)
    w = numpy_helper.from_array(
        (rng.standard_normal((HIDDEN, HIDDEN)) * 0.35).astype(np.float32), "w")
    bias_values = np.zeros(HIDDEN, np.float32)
    bias_values[3] = LOUD_BIAS
    bias = numpy_helper.from_array(bias_values, "bias")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="h"),
        helper.make_node("Add", ["x", "bias"], ["biased"], name="biased"),
        helper.make_node("Constant", [], ["tiny"], name="tiny", value_float=1e-4),
        helper.make_node("Mul", ["biased", "tiny"], ["scaled"], name="scaled"),
        helper.make_node("Add", ["h", "scaled"], ["y"], name="y"),
    ]
    graph = helper.make_graph(
        nodes, "loud",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", TOKENS, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", TOKENS, HIDDEN])],
        [w, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


LOUD_CONFIG = f"""name: "loud_auto"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {TOKENS}, {HIDDEN} ] }} ]
output [ {{ name: "y" data_type: TYPE_FP32 dims: [ {TOKENS}, {HIDDEN} ] }} ]
capture {{ batch_sizes: [ 1, 4 ] precision: "auto" }}
"""


def config_text(name, precision):
    capture = f' precision: "{precision}"' if precision else ""
    return f"""name: "{name}"
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ {{ name: "x" data_type: TYPE_FP32 dims: [ {TOKENS}, {HIDDEN} ] }} ]
output [
  {{ name: "y" data_type: TYPE_FP32 dims: [ {TOKENS}, {HIDDEN} ] }},
  {{ name: "p" data_type: TYPE_FP32 dims: [ {TOKENS}, {TOKENS} ] }}
]
capture {{ batch_sizes: [ 1, 4 ]{capture} }}
"""


# Repository entry name -> capture.precision ("" writes none).
ENTRIES = {"block": "", "block_fp16": "fp16", "block_bf16": "bf16", "block_auto": "auto",
           "block_fp8": "fp8"}


def make_repository():
    repository = os.path.join(gp.scratch_dir("precision_"), "models")
    model = transformer_block()
    for name, precision in ENTRIES.items():
        os.makedirs(os.path.join(repository, name, "1"))
        onnx.save(model, os.path.join(repository, name, "1", "model.onnx"))
        with open(os.path.join(repository, name, "config.pbtxt"), "w") as config:
            config.write(config_text(name, precision))
    os.makedirs(os.path.join(repository, "loud_auto", "1"))
    onnx.save(loud_block(), os.path.join(repository, "loud_auto", "1", "model.onnx"))
    with open(os.path.join(repository, "loud_auto", "config.pbtxt"), "w") as config:
        config.write(LOUD_CONFIG)
    return repository


class PrecisionServingTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.repository = make_repository()
        cls.server = gp.ServerProcess(SERVER_BINARY, cls.repository,
                                      ["--exit-on-error=false"]).start()
        cls.client = grpcclient.InferenceServerClient(url=cls.server.url)
        cls.x = gp.random_inputs({"x": (TOKENS, HIDDEN)}, ROWS, seed=11)["x"]
        cls.reference = gp.ReferenceModel(cls.repository, "block").run({"x": cls.x})

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        gp.stop_checked(cls.server)

    def infer(self, model, outputs=("y", "p")):
        tensor = grpcclient.InferInput("x", list(self.x.shape), "FP32")
        tensor.set_data_from_numpy(self.x)
        result = self.client.infer(model, [tensor])
        response = result.get_response()
        datatypes = {output.name: output.datatype for output in response.outputs}
        self.assertEqual(datatypes, {name: "FP32" for name in outputs},
                         f"SERVER: {model} answers in its declared float32")
        return {name: result.as_numpy(name) for name in outputs}

    def test_float32_model_matches_onnxruntime(self):
        got = self.infer("block")
        for name, want in self.reference.items():
            error = gp.relative_error(got[name], want)
            self.assertLess(error, gp.RELATIVE_TOLERANCE, f"SERVER: block output {name}")

    def test_half_precisions_answer_float32_close_to_onnxruntime(self):
        exact = self.infer("block")
        for precision, tolerance in TOLERANCE.items():
            model = f"block_{precision}"
            metadata = self.client.get_model_metadata(model)
            self.assertEqual([(t.name, t.datatype) for t in metadata.inputs], [("x", "FP32")],
                             f"SERVER: {model} declares its float32 input")
            got = self.infer(model)
            for name, want in self.reference.items():
                self.assertEqual(got[name].shape, want.shape, f"SERVER: {model} output {name}")
                error = gp.relative_error(got[name], want)
                print(f"{model} {name}: relative error {error:.2e} against onnxruntime float32")
                self.assertLess(error, tolerance, f"SERVER: {model} output {name}")
            self.assertFalse(np.array_equal(got["y"], exact["y"]),
                             f"SERVER: {model} answered exactly as the float32 model: was it "
                             f"converted?")

    def test_auto_keeps_the_loud_nodes_in_float32_and_logs_why(self):
        want = gp.ReferenceModel(self.repository, "loud_auto").run({"x": self.x})["y"]
        got = self.infer("loud_auto", outputs=("y",))["y"]
        error = gp.relative_error(got, want)
        print(f"loud_auto y: relative error {error:.2e} against onnxruntime float32")
        self.assertLess(error, TOLERANCE["auto"], "SERVER: loud_auto output y")
        output = self.server.output()
        # y adds the float32 `scaled` to h: float32 too, as autocast promotes.
        expected = ("model 'loud_auto': precision auto keeps 3 nodes in float32: 0 for their op "
                    "(as fp16), 1 as autocast promotes and 2 for their values on the calibration "
                    "batch: 'biased' (weight 'bias' max |w| 7.0e4 > 65504; output max |x| 7.0e4 > "
                    "512), 'scaled' (input 'biased' max |x| 7.0e4 > 512)")
        self.assertIn(expected, output, "SERVER: the load log names the kept nodes and why")
        self.assertIn("model 'block_auto': precision auto keeps 2 nodes in float32: 2 for their "
                      "op (as fp16), 0 as autocast promotes and 0 for their values", output,
                      "SERVER: the block keeps its LayerNorm and Softmax only")

    def test_startup_table_names_each_precision(self):
        output = self.server.output()
        for model, precision in (("block", "fp32"), ("block_fp16", "fp16"),
                                 ("block_bf16", "bf16"), ("block_auto", "auto"),
                                 ("loud_auto", "auto")):
            rows = [line.split() for line in output.splitlines()
                    if line.split()[:3] == [model, "1", "READY"]]
            self.assertEqual(len(rows), 1, f"SERVER: one READY row for {model}:\n{output}")
            self.assertIn(precision, rows[0], f"SERVER: {model}'s row says {precision}")

    def test_unknown_precision_fails_that_model_naming_field_and_choices(self):
        self.assertFalse(self.client.is_model_ready("block_fp8"))
        self.assertTrue(self.client.is_model_ready("block_fp16"))
        output = self.server.output()
        expected = ("config.pbtxt capture.precision: 'fp8' is not a precision; choose fp32 "
                    "(the default), tf32, fp16, bf16 or auto")
        self.assertIn(expected, output, "SERVER: the failed load says why")


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
