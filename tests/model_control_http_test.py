"""Triton's model repository extension over HTTP/REST, through Triton's Python
HTTP client (tritonclient.http) unchanged, against the real graphserve binary
with --model-control-mode=explicit --load-model mlp: the index, a load that
then serves inferences, an unload, and the refusal of a server without
explicit model control.

    bazel test //tests:model_control_http_test \
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import json
import sys
import unittest
import urllib.error
import urllib.request

import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(
        SERVER_BINARY, MAKE_REPOSITORY,
        extra_flags=("--model-control-mode=explicit", "--load-model", "mlp"))


def tearDownModule():
    gp.stop_checked(_server)


def post(port, path, body):
    """(HTTP status, parsed JSON body or None) of a raw POST."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body.encode(),
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            code, content = response.status, response.read()
    except urllib.error.HTTPError as error:
        code, content = error.code, error.read()
    return code, (json.loads(content) if content else None)


class ModelControlHttpTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = httpclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def infer_dlrm(self):
        inputs = gp.random_inputs(gp.DEMO_INPUTS["dlrm_dense"], 4, seed=1)
        tensors = []
        for name, array in inputs.items():
            tensor = httpclient.InferInput(name, list(array.shape), "FP32")
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        got = self.client.infer("dlrm_dense", tensors).as_numpy("prob")
        want = gp.ReferenceModel(_repository, "dlrm_dense").run(inputs)["prob"]
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)

    # One test, in order: each step depends on the state the one before left.
    def test_index_load_infer_unload(self):
        index = {m["name"]: m for m in self.client.get_model_repository_index()}
        self.assertEqual(index["mlp"], {"name": "mlp", "version": "1", "state": "READY"})
        self.assertEqual(index["dlrm_dense"], {"name": "dlrm_dense"})  # never loaded
        self.assertFalse(self.client.is_model_ready("dlrm_dense"))

        self.client.load_model("dlrm_dense")
        self.assertTrue(self.client.is_model_ready("dlrm_dense"))
        index = {m["name"]: m for m in self.client.get_model_repository_index()}
        self.assertEqual(index["dlrm_dense"]["state"], "READY")
        self.infer_dlrm()

        self.client.unload_model("dlrm_dense")
        self.assertFalse(self.client.is_model_ready("dlrm_dense"))
        with self.assertRaises(InferenceServerException):
            self.infer_dlrm()
        self.assertTrue(self.client.is_model_ready("mlp"))

    def test_ready_only_index(self):
        code, body = post(_server.http_port, "/v2/repository/index", '{"ready": true}')
        self.assertEqual(code, 200)
        self.assertIn({"name": "mlp", "version": "1", "state": "READY"}, body)
        self.assertNotIn({"name": "dlrm_dense"}, body)

    def test_errors_reach_the_client(self):
        with self.assertRaises(InferenceServerException) as raised:
            self.client.load_model("nope")
        self.assertIn("nope", str(raised.exception))
        code, body = post(_server.http_port, "/v2/repository/models/mlp/load", "[1]")
        self.assertEqual(code, 400)
        self.assertIn("load of model 'mlp'", body["error"])
        code, body = post(_server.http_port, "/v2/repository/models/mlp/reload", "")
        self.assertEqual(code, 404)
        self.assertTrue(self.client.is_model_ready("mlp"))

    def test_load_without_explicit_model_control_is_refused(self):
        with gp.ServerProcess(SERVER_BINARY, _repository) as plain:
            client = httpclient.InferenceServerClient(f"127.0.0.1:{plain.http_port}")
            try:
                with self.assertRaises(InferenceServerException) as raised:
                    client.load_model("dlrm_dense")
                self.assertIn("--model-control-mode=explicit", str(raised.exception))
                self.assertEqual(raised.exception.status(), "400")
                # Nothing changed: every model still serves.
                self.assertTrue(client.is_model_ready("dlrm_dense"))
            finally:
                client.close()


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
