"""The KServe v2 HTTP/REST endpoint of the real graphserve binary, driven as a
user drives it: `curl` for health, metadata and a JSON inference (with `-d`,
which labels the body form-encoded), and a binary-data request in Triton's
extension (Inference-Header-Content-Length) made with urllib, as
tritonclient.http sends it. Outputs are compared with onnxruntime.

    bazel test //tests:http_compat_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import json
import os
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

import numpy as np

import graphserve_process as gp

CALL_TIMEOUT_S = 30

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(SERVER_BINARY, MAKE_REPOSITORY)


def tearDownModule():
    gp.stop_checked(_server)


def url(path):
    return f"http://127.0.0.1:{_server.http_port}{path}"


def curl(*args):
    """curl's (status code, body) for `args`."""
    done = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", *args], capture_output=True,
                          text=True, timeout=CALL_TIMEOUT_S, check=True)
    body, _, code = done.stdout.rpartition("\n")
    return int(code), body


class HttpTest(unittest.TestCase):

    def test_health_and_metadata_with_curl(self):
        self.assertEqual(curl(url("/v2/health/live"))[0], 200)
        self.assertEqual(curl(url("/v2/health/ready"))[0], 200)
        code, body = curl(url("/v2"))
        self.assertEqual(code, 200)
        self.assertEqual(json.loads(body)["name"], "graphserve")
        code, body = curl(url("/v2/models/mlp"))
        self.assertEqual(code, 200, f"SERVER: GET /v2/models/mlp: {body}")
        metadata = json.loads(body)
        self.assertEqual(metadata["inputs"][0]["name"], "x")
        self.assertEqual(metadata["inputs"][0]["shape"], [-1, *gp.DEMO_INPUTS["mlp"]["x"]])
        code, body = curl(url("/v2/models/mlp/config"))
        self.assertEqual(json.loads(body)["max_batch_size"], gp.DEMO_MAX_BATCH)
        code, body = curl(url("/v2/models/nope"))
        self.assertEqual(code, 404)
        self.assertIn("nope", json.loads(body)["error"])

    def test_json_inference_with_curl_matches_onnxruntime(self):
        inputs = gp.random_inputs(gp.DEMO_INPUTS["dlrm_dense"], 5, seed=7)
        request = {"inputs": [{"name": name, "datatype": "FP32", "shape": list(array.shape),
                               "data": array.tolist()} for name, array in inputs.items()]}
        path = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "request.json")
        with open(path, "w") as f:
            json.dump(request, f)
        code, body = curl("-X", "POST", url("/v2/models/dlrm_dense/infer"), "-d", f"@{path}")
        self.assertEqual(code, 200, f"SERVER: POST infer: {body[:300]}")
        output = json.loads(body)["outputs"][0]
        self.assertEqual(output["name"], "prob")
        self.assertEqual(output["shape"], [5, 1])
        want = gp.ReferenceModel(_repository, "dlrm_dense").run(inputs)["prob"]
        got = np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)

    def test_binary_tensor_data_both_ways(self):
        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 4, seed=3)["x"]
        header = json.dumps({
            "inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                        "parameters": {"binary_data_size": x.nbytes}}],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}],
        }).encode()
        request = urllib.request.Request(
            url("/v2/models/mlp/versions/1/infer"), data=header + x.tobytes(), method="POST",
            headers={"Inference-Header-Content-Length": str(len(header)),
                     "Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as response:
            length = int(response.headers["Inference-Header-Content-Length"])
            body = response.read()
        answer = json.loads(body[:length])
        self.assertEqual(answer["outputs"][0]["parameters"]["binary_data_size"], 4 * 4)
        got = np.frombuffer(body[length:], dtype=np.float32).reshape(4, 1)
        want = gp.ReferenceModel(_repository, "mlp").run({"x": x})["y"]
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)

    def test_bad_json_is_400_and_the_server_keeps_serving(self):
        code, body = curl("-X", "POST", url("/v2/models/mlp/infer"), "-d", "{not json")
        self.assertEqual(code, 400)
        self.assertIn("not valid JSON", json.loads(body)["error"])
        self.assertEqual(curl(url("/v2/health/ready"))[0], 200)


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
