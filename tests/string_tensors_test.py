"""STRING (BYTES) tensors served by the real graphserve binary on the host
executor, seen from Triton's Python clients (Note [Strings at the model's
edges] in runtime/ir.h).

ONNX models built here, served from one repository:
  - add_sub: Triton's QA add/sub model with STRING at both edges (inputs
    Cast to INT32, OUTPUT0 Cast back to STRING, OUTPUT1 left INT32);
  - float_text: FP32 text in, its double as text out (onnxruntime's
    formatting of floats, NaN and the infinities);
  - echo: Triton's QA identity model of "object" tensors without batching,
    every dim open (served with no runtime at all);
  - plain: an FP32 model, which refuses BYTES clearly;
  - string_add: Add of STRING inputs, refused at load naming the node.
Every answer is compared with onnxruntime's run of the same file, over gRPC
(raw contents and typed bytes_contents), HTTP/REST (JSON and the binary
extension) and system shared memory (inputs and outputs in regions). CUDA
shared memory reads BYTES through the same code after a copy to the host
(server/request_validation.cc); without a GPU here it is not run.

    bazel test //tests:string_tensors_test \\
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

A failing assertion whose message starts with "SERVER:" names the model, the
transport and what came back.
"""

import os
import struct
import sys
import unittest
import uuid

import grpc
import numpy as np
import onnx
import onnxruntime
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from onnx import TensorProto, helper
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException, serialize_byte_tensor

import graphserve_process as gp

SERVER_BINARY = MAKE_REPOSITORY = None
ROWS = 3  # within max_batch_size 8, not a captured size: padded on the host executor
WIDTH = 16  # Triton's QA models' row


def save(repository, name, graph, config):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # onnxruntime 1.31 reads up to IR 10
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(repository, name, "1"))
    onnx.save(model, os.path.join(repository, name, "1", "model.onnx"))
    with open(os.path.join(repository, name, "config.pbtxt"), "w") as out:
        out.write(config)


def cast(source, target, to):
    return helper.make_node("Cast", [source], [target], to=to)


def make_repository():
    repository = os.path.join(gp.scratch_dir("strings_"), "models")
    string_row = lambda name: helper.make_tensor_value_info(name, TensorProto.STRING,
                                                            ["batch", WIDTH])
    save(repository, "add_sub", helper.make_graph(
        [cast("INPUT0", "a", TensorProto.INT32), cast("INPUT1", "b", TensorProto.INT32),
         helper.make_node("Add", ["a", "b"], ["sum"]),
         helper.make_node("Sub", ["a", "b"], ["diff"]),
         cast("sum", "OUTPUT0", TensorProto.STRING), cast("diff", "OUTPUT1", TensorProto.INT32)],
        "add_sub", [string_row("INPUT0"), string_row("INPUT1")],
        [string_row("OUTPUT0"),
         helper.make_tensor_value_info("OUTPUT1", TensorProto.INT32, ["batch", WIDTH])]),
        f"""name: "add_sub"
max_batch_size: 8
input [ {{ name: "INPUT0" data_type: TYPE_STRING dims: [ {WIDTH} ] }},
        {{ name: "INPUT1" data_type: TYPE_STRING dims: [ {WIDTH} ] }} ]
output [ {{ name: "OUTPUT0" data_type: TYPE_STRING dims: [ {WIDTH} ] }},
         {{ name: "OUTPUT1" data_type: TYPE_INT32 dims: [ {WIDTH} ] }} ]
""")
    save(repository, "float_text", helper.make_graph(
        [cast("x", "f", TensorProto.FLOAT), helper.make_node("Add", ["f", "f"], ["twice"]),
         cast("twice", "y", TensorProto.STRING)],
        "float_text", [helper.make_tensor_value_info("x", TensorProto.STRING, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, ["batch", 4])]),
        """name: "float_text"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_STRING dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_STRING dims: [ 4 ] } ]
""")
    save(repository, "echo", helper.make_graph(
        [helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])], "echo",
        [helper.make_tensor_value_info("INPUT0", TensorProto.STRING, ["d0", "d1"])],
        [helper.make_tensor_value_info("OUTPUT0", TensorProto.STRING, ["d0", "d1"])]),
        """name: "echo"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1, -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1, -1 ] } ]
""")
    save(repository, "plain", helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])], "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])]),
        """name: "plain"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
""")
    save(repository, "string_add", helper.make_graph(
        [helper.make_node("Concat", ["s", "s"], ["t"], axis=1, name="concat_strings")],
        "string_add", [helper.make_tensor_value_info("s", TensorProto.STRING, ["batch", 2])],
        [helper.make_tensor_value_info("t", TensorProto.STRING, ["batch", 4])]),
        """name: "string_add"
max_batch_size: 8
input [ { name: "s" data_type: TYPE_STRING dims: [ 2 ] } ]
output [ { name: "t" data_type: TYPE_STRING dims: [ 4 ] } ]
""")
    return repository


def text(array):
    """Elements as str: tritonclient gives bytes, onnxruntime str."""
    return [x.decode() if isinstance(x, bytes) else str(x) for x in np.asarray(array).ravel()]


def numbers_as_text(rng, shape):
    return np.array([str(x) for x in rng.integers(-1000, 1000, size=shape).ravel()],
                    dtype=object).reshape(shape)


def serialized(elements):
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


class StringTensorsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.repository = make_repository()
        cls.server = gp.ServerProcess(SERVER_BINARY, cls.repository,
                                      ["--exit-on-error=false"]).start()
        cls.grpc = grpcclient.InferenceServerClient(url=cls.server.url)
        cls.http = httpclient.InferenceServerClient(url=f"127.0.0.1:{cls.server.http_port}")
        rng = np.random.default_rng(27)
        cls.in0 = numbers_as_text(rng, (ROWS, WIDTH))
        cls.in1 = numbers_as_text(rng, (ROWS, WIDTH))

    @classmethod
    def tearDownClass(cls):
        cls.grpc.close()
        cls.http.close()
        gp.stop_checked(cls.server)

    def reference(self, model, feeds):
        path = os.path.join(self.repository, model, "1", "model.onnx")
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))

    def check_add_sub(self, outputs, transport):
        want = self.reference("add_sub", {"INPUT0": self.in0, "INPUT1": self.in1})
        self.assertEqual(outputs["OUTPUT0"].shape, (ROWS, WIDTH), f"SERVER: {transport}")
        self.assertEqual(text(outputs["OUTPUT0"]), text(want["OUTPUT0"]),
                         f"SERVER: add_sub OUTPUT0 (text of the sum) over {transport}")
        np.testing.assert_array_equal(outputs["OUTPUT1"], want["OUTPUT1"],
                                      f"SERVER: add_sub OUTPUT1 over {transport}")

    def test_metadata_and_config_say_bytes_and_type_string(self):
        metadata = self.grpc.get_model_metadata("add_sub")
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in metadata.inputs],
                         [("INPUT0", "BYTES", [-1, WIDTH]), ("INPUT1", "BYTES", [-1, WIDTH])])
        self.assertEqual([(t.name, t.datatype) for t in metadata.outputs],
                         [("OUTPUT0", "BYTES"), ("OUTPUT1", "INT32")])
        config = self.http.get_model_config("add_sub")
        self.assertEqual([i["data_type"] for i in config["input"]], ["TYPE_STRING"] * 2)
        echo = self.http.get_model_metadata("echo")
        self.assertEqual(echo["inputs"][0]["datatype"], "BYTES")
        self.assertEqual(echo["inputs"][0]["shape"], [-1, -1])

    def test_grpc_raw_contents(self):
        inputs = []
        for name, array in (("INPUT0", self.in0), ("INPUT1", self.in1)):
            tensor = grpcclient.InferInput(name, list(array.shape), "BYTES")
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        result = self.grpc.infer("add_sub", inputs)
        self.assertEqual(result.get_response().outputs[0].datatype, "BYTES")
        self.check_add_sub({n: result.as_numpy(n) for n in ("OUTPUT0", "OUTPUT1")}, "gRPC raw")

    def test_grpc_typed_bytes_contents(self):
        request = service_pb2.ModelInferRequest(model_name="add_sub")
        for name, array in (("INPUT0", self.in0), ("INPUT1", self.in1)):
            tensor = request.inputs.add(name=name, datatype="BYTES", shape=list(array.shape))
            tensor.contents.bytes_contents.extend(x.encode() for x in array.ravel())
        with grpc.insecure_channel(self.server.url) as channel:
            response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(
                request, timeout=30)
        result = grpcclient.InferResult(response)
        self.check_add_sub({n: result.as_numpy(n) for n in ("OUTPUT0", "OUTPUT1")},
                           "gRPC bytes_contents")

    def test_http_json_and_binary(self):
        for binary in (False, True):
            inputs, outputs = [], []
            for name, array in (("INPUT0", self.in0), ("INPUT1", self.in1)):
                tensor = httpclient.InferInput(name, list(array.shape), "BYTES")
                tensor.set_data_from_numpy(array, binary_data=binary)
                inputs.append(tensor)
            for name in ("OUTPUT0", "OUTPUT1"):
                outputs.append(httpclient.InferRequestedOutput(name, binary_data=binary))
            result = self.http.infer("add_sub", inputs, outputs=outputs)
            self.check_add_sub({n: result.as_numpy(n) for n in ("OUTPUT0", "OUTPUT1")},
                               "HTTP binary" if binary else "HTTP JSON")

    def test_floats_are_formatted_as_onnxruntime_formats_them(self):
        x = np.array([["0.1", "NaN", "-INF", "1e10"], ["-0", " 2.5 ", "1e-45", "3.4e38"]],
                     dtype=object)
        want = self.reference("float_text", {"x": x})["y"]
        tensor = grpcclient.InferInput("x", list(x.shape), "BYTES")
        tensor.set_data_from_numpy(x)
        got = self.grpc.infer("float_text", [tensor]).as_numpy("y")
        self.assertEqual(text(got), text(want), "SERVER: float_text's y over gRPC")

    def test_strings_pass_through_unchanged_in_any_shape(self):
        for shape in ((1, 1), (2, 3), (5, 1)):
            sent = np.array([f"s{i} \u00e9".encode() for i in range(int(np.prod(shape)))],
                            dtype=object).reshape(shape)
            sent.ravel()[0] = b"\x00\xff raw bytes"
            tensor = grpcclient.InferInput("INPUT0", list(shape), "BYTES")
            tensor.set_data_from_numpy(sent)
            got = self.grpc.infer("echo", [tensor]).as_numpy("OUTPUT0")
            self.assertEqual(got.shape, shape, "SERVER: echo keeps the shape sent")
            self.assertEqual(list(got.ravel()), list(sent.ravel()), "SERVER: echo's bytes")
            tensor = httpclient.InferInput("INPUT0", list(shape), "BYTES")
            tensor.set_data_from_numpy(sent, binary_data=True)
            got = self.http.infer("echo", [tensor]).as_numpy("OUTPUT0")
            self.assertEqual(list(got.ravel()), list(sent.ravel()), "SERVER: echo over HTTP")

    def test_system_shared_memory_inputs_and_outputs(self):
        run = uuid.uuid4().hex[:8]
        in0 = serialize_byte_tensor(self.in0).item()
        in1 = serialize_byte_tensor(self.in1).item()
        out_bytes = 4096  # room for 48 numbers as text
        handle = shm.create_shared_memory_region(f"strings_{run}", f"/graphserve_test_{run}",
                                                 len(in0) + len(in1) + out_bytes)
        try:
            shm.set_shared_memory_region(handle, [np.frombuffer(in0 + in1, dtype=np.uint8)])
            for client, module in ((self.grpc, grpcclient), (self.http, httpclient)):
                region = f"strings_{run}_{module.__name__.split('.')[-1]}"
                client.register_system_shared_memory(region, f"/graphserve_test_{run}",
                                                     len(in0) + len(in1) + out_bytes)
                try:
                    inputs = []
                    for name, offset, size in (("INPUT0", 0, len(in0)),
                                               ("INPUT1", len(in0), len(in1))):
                        tensor = module.InferInput(name, [ROWS, WIDTH], "BYTES")
                        tensor.set_shared_memory(region, size, offset=offset)
                        inputs.append(tensor)
                    out0 = module.InferRequestedOutput("OUTPUT0")
                    out0.set_shared_memory(region, out_bytes, offset=len(in0) + len(in1))
                    result = client.infer("add_sub", inputs, outputs=[out0])
                    got = shm.get_contents_as_numpy(handle, np.object_, [ROWS, WIDTH],
                                                    offset=len(in0) + len(in1))
                    want = self.reference("add_sub", {"INPUT0": self.in0, "INPUT1": self.in1})
                    self.assertEqual(text(got), text(want["OUTPUT0"]),
                                     f"SERVER: OUTPUT0 in shared memory over {module.__name__}")
                    if module is grpcclient:  # HTTP answers a region's output without parameters
                        written = result.get_output("OUTPUT0").parameters[
                            "shared_memory_byte_size"].int64_param
                        self.assertEqual(written,
                                         len(serialize_byte_tensor(want["OUTPUT0"]).item()),
                                         "SERVER: shared_memory_byte_size is the strings' size")
                    # A range too small for the text: refused with Triton's words.
                    out0.set_shared_memory(region, 8, offset=len(in0) + len(in1))
                    with self.assertRaises(InferenceServerException) as refused:
                        client.infer("add_sub", inputs, outputs=[out0])
                    self.assertIn("should be at least", str(refused.exception))
                finally:
                    client.unregister_system_shared_memory(region)
        finally:
            shm.destroy_shared_memory_region(handle)

    def test_bad_bytes_are_refused_naming_the_input(self):
        def refused(model, name, array, datatype="BYTES"):
            tensor = grpcclient.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            with self.assertRaises(InferenceServerException) as caught:
                self.grpc.infer(model, [tensor] + ([] if model != "add_sub" else [other]))
            self.assertEqual(caught.exception.status(), "StatusCode.INVALID_ARGUMENT")
            return caught.exception.message()

        other = grpcclient.InferInput("INPUT1", [ROWS, WIDTH], "BYTES")
        other.set_data_from_numpy(self.in1)
        bad = self.in0.copy()
        bad[1, 3] = "12abc"
        self.assertIn("input 'INPUT0' of model 'add_sub': element 19, '12abc', is not a decimal "
                      "integer", refused("add_sub", "INPUT0", bad))
        bad[1, 3] = "2147483648"
        self.assertIn("outside the range of INT32", refused("add_sub", "INPUT0", bad))
        self.assertIn("data-type is 'BYTES', but model 'plain' expects 'FP32'",
                      refused("plain", "x", np.array([["1"] * 4], dtype=object)))
        self.assertIn("data-type is 'FP32', but model 'float_text' expects 'BYTES'",
                      refused("float_text", "x", np.zeros((1, 4), np.float32), "FP32"))

        # Framing a client library would not send: a length past the end.
        request = service_pb2.ModelInferRequest(model_name="echo")
        request.inputs.add(name="INPUT0", datatype="BYTES", shape=[1, 2])
        request.raw_input_contents.append(serialized([b"ok"]) + struct.pack("<I", 1 << 31) + b"x")
        with grpc.insecure_channel(self.server.url) as channel:
            with self.assertRaises(grpc.RpcError) as caught:
                service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request, timeout=30)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("has element 1 of length 2147483648 but only 1 bytes",
                      caught.exception.details())

        # Over HTTP: a 400 with the same words.
        tensor = httpclient.InferInput("x", [1, 4], "BYTES")
        tensor.set_data_from_numpy(np.array([["1", "x", "2", "3"]], dtype=object),
                                   binary_data=False)
        with self.assertRaises(InferenceServerException) as caught:
            self.http.infer("float_text", [tensor])
        self.assertEqual(caught.exception.status(), "400")
        self.assertIn("element 1, 'x', is not a number", caught.exception.message())
        self.assertTrue(self.grpc.is_model_ready("add_sub"), "SERVER: still serving")

    def test_a_string_op_inside_the_model_is_refused_at_load_naming_the_node(self):
        self.assertFalse(self.grpc.is_model_ready("string_add"))
        self.assertIn("node 'concat_strings' (Concat) reads STRING value 's' of input 's'",
                      self.server.output())


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv)
