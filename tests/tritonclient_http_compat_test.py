"""Triton's Python HTTP client (tritonclient.http, pinned in
deploy/python_requirements.txt) against the real graphserve binary's KServe v2
HTTP/REST endpoint, unchanged: health, metadata, config, statistics, and
inference with binary and JSON tensors both ways, compared with onnxruntime.

    bazel test //tests:tritonclient_http_compat_test \
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import sys
import unittest

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(SERVER_BINARY, MAKE_REPOSITORY)


def tearDownModule():
    gp.stop_checked(_server)


class TritonHttpClientTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = httpclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_health_metadata_config_and_statistics(self):
        self.assertTrue(self.client.is_server_live())
        self.assertTrue(self.client.is_server_ready())
        self.assertTrue(self.client.is_model_ready("mlp"))
        self.assertFalse(self.client.is_model_ready("nope"))
        self.assertEqual(self.client.get_server_metadata()["name"], "graphserve")
        metadata = self.client.get_model_metadata("dlrm_dense")
        self.assertEqual({i["name"]: i["shape"][1:] for i in metadata["inputs"]},
                         {name: list(dims) for name, dims in gp.DEMO_INPUTS["dlrm_dense"].items()})
        self.assertEqual(self.client.get_model_config("mlp")["max_batch_size"], gp.DEMO_MAX_BATCH)
        stats = self.client.get_inference_statistics("mlp")
        self.assertEqual(stats["model_stats"][0]["name"], "mlp")

    def infer_dlrm(self, binary_in, binary_out, rows=6, seed=0):
        inputs = gp.random_inputs(gp.DEMO_INPUTS["dlrm_dense"], rows, seed)
        tensors = []
        for name, array in inputs.items():
            tensor = httpclient.InferInput(name, list(array.shape), "FP32")
            tensor.set_data_from_numpy(array, binary_data=binary_in)
            tensors.append(tensor)
        outputs = [httpclient.InferRequestedOutput("prob", binary_data=binary_out)]
        result = self.client.infer("dlrm_dense", tensors, outputs=outputs, request_id="r7")
        self.assertEqual(result.get_response()["id"], "r7")
        want = gp.ReferenceModel(_repository, "dlrm_dense").run(inputs)["prob"]
        got = result.as_numpy("prob")
        self.assertEqual(got.shape, (rows, 1))
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE,
                        f"binary in {binary_in}, out {binary_out}")

    def test_infer_every_mix_of_binary_and_json(self):
        for binary_in in (True, False):
            for binary_out in (True, False):
                self.infer_dlrm(binary_in, binary_out)

    def test_async_infer(self):
        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 3, seed=4)["x"]
        tensor = httpclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        pending = [self.client.async_infer("mlp", [tensor]) for _ in range(4)]
        want = gp.ReferenceModel(_repository, "mlp").run({"x": x})["y"]
        for request in pending:
            got = request.get_result().as_numpy("y")
            self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)

    def test_classification_as_json_and_binary(self):
        # Triton's classification extension through class_count, the classes
        # as JSON strings and as binary BYTES: each row's "<value>:<index>"
        # (mlp's y has one class a row), value printed as C's %f.
        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 4, seed=12)["x"]
        tensor = httpclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        values = self.client.infer("mlp", [tensor]).as_numpy("y")
        want = np.array([[f"{float(v):.6f}:0".encode()] for v in values[:, 0]], dtype=object)
        for binary in (True, False):
            with self.subTest(binary=binary):
                output = httpclient.InferRequestedOutput("y", binary_data=binary, class_count=2)
                result = self.client.infer("mlp", [tensor], outputs=[output])
                self.assertEqual(result.get_output("y")["datatype"], "BYTES")
                got = result.as_numpy("y")
                if not binary:  # JSON strings come back as str
                    got = np.array([[e.encode() for e in row] for row in got], dtype=object)
                np.testing.assert_array_equal(got, want)

    def test_errors_reach_the_client(self):
        x = np.zeros((1, 512), dtype=np.float32)
        tensor = httpclient.InferInput("x", [1, 512], "FP32")
        tensor.set_data_from_numpy(x)
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("nope", [tensor])
        self.assertIn("nope", str(raised.exception))
        wrong = httpclient.InferInput("q", [1, 512], "FP32")
        wrong.set_data_from_numpy(x)
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("mlp", [wrong])
        self.assertIn("q", str(raised.exception))
        self.assertTrue(self.client.is_server_ready())


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
