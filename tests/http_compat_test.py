"""The KServe v2 HTTP/REST endpoint of the real graphserve binary, driven as a
user drives it: `curl` for health, metadata and a JSON inference (with `-d`,
which labels the body form-encoded), and a binary-data request in Triton's
extension (Inference-Header-Content-Length) made with urllib, as
tritonclient.http sends it. Outputs are compared with onnxruntime.

    bazel test //tests:http_compat_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import asyncio
import gzip
import json
import os
import subprocess
import sys
import unittest
import urllib.error
import urllib.request
import zlib

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

    def test_only_inference_answers_are_compressed(self):
        """Triton's rule: an inference answer in the encoding Accept-Encoding
        weighs highest of gzip and deflate; every other answer as is."""

        def call(path, encoding, data=None, headers=None):
            request = urllib.request.Request(
                url(path), data=data, method="POST" if data is not None else "GET",
                headers={"Accept-Encoding": encoding, **(headers or {})})
            try:
                with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as answer:
                    return answer.status, answer.headers, answer.read()
            except urllib.error.HTTPError as error:
                return error.code, error.headers, error.read()

        for path in ("/v2/health/ready", "/v2", "/v2/models/mlp", "/v2/models/mlp/config",
                     "/v2/models/mlp/stats", "/v2/systemsharedmemory/status",
                     "/v2/models/nope/config", "/v2/no/such/route"):
            with self.subTest(path=path):
                code, headers, body = call(path, "gzip, deflate, br")
                self.assertIsNone(headers.get("Content-Encoding"), f"SERVER: {path}: {code}")
                if body:
                    json.loads(body)  # plain JSON, not compressed bytes

        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 3, seed=11)["x"]
        want = gp.ReferenceModel(_repository, "mlp").run({"x": x})["y"]
        request = json.dumps({"inputs": [{"name": "x", "datatype": "FP32",
                                          "shape": list(x.shape), "data": x.tolist()}]}).encode()
        for accept, encoding, decompress in (
                ("gzip", "gzip", gzip.decompress),
                ("deflate", "deflate", zlib.decompress),
                ("gzip;q=0.5, deflate;q=0.9", "deflate", zlib.decompress),
                ("gzip;q=0", None, bytes),
                ("br", None, bytes)):
            with self.subTest(accept=accept):
                code, headers, body = call("/v2/models/mlp/infer", accept, request)
                self.assertEqual(code, 200, body[:300])
                self.assertEqual(headers.get("Content-Encoding"), encoding)
                got = json.loads(decompress(body))["outputs"][0]["data"]
                self.assertLess(gp.relative_error(np.array(got, np.float32).reshape(want.shape),
                                                  want), gp.RELATIVE_TOLERANCE)

        # A binary answer too; its Inference-Header-Content-Length is the
        # JSON's length before compression, as Triton's.
        header = json.dumps({
            "inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                        "parameters": {"binary_data_size": x.nbytes}}],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
        code, headers, body = call("/v2/models/mlp/infer", "gzip", header + x.tobytes(),
                                   {"Inference-Header-Content-Length": str(len(header))})
        self.assertEqual(code, 200, body[:300])
        self.assertEqual(headers.get("Content-Encoding"), "gzip")
        body = gzip.decompress(body)
        length = int(headers["Inference-Header-Content-Length"])
        self.assertEqual(json.loads(body[:length])["outputs"][0]["name"], "y")
        got = np.frombuffer(body[length:], dtype=np.float32).reshape(want.shape)
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)

    def test_tritonclient_http_aio_reads_every_answer(self):
        # aiohttp asks for gzip and deflate on every call and tritonclient's
        # aio client decompresses only inference answers.
        import tritonclient.http.aio as aioclient

        async def calls():
            client = aioclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")
            try:
                self.assertTrue(await client.is_server_live())
                self.assertTrue(await client.is_server_ready())
                self.assertTrue(await client.is_model_ready("mlp"))
                metadata = await client.get_model_metadata("mlp")
                self.assertEqual(metadata["inputs"][0]["name"], "x")
                config = await client.get_model_config("mlp")
                self.assertEqual(config["max_batch_size"], gp.DEMO_MAX_BATCH)
                await client.get_inference_statistics("mlp")
                await client.get_system_shared_memory_status()
                x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 2, seed=5)["x"]
                tensor = aioclient.InferInput("x", list(x.shape), "FP32")
                tensor.set_data_from_numpy(x)
                result = await client.infer("mlp", [tensor])
                want = gp.ReferenceModel(_repository, "mlp").run({"x": x})["y"]
                self.assertLess(gp.relative_error(result.as_numpy("y"), want),
                                gp.RELATIVE_TOLERANCE)
            finally:
                await client.close()

        asyncio.run(calls())

    def test_common_errors_carry_tritons_status_and_text(self):
        """Triton's HTTP statuses and leading texts (Note [Triton's error
        texts] in server/model_registry.cc)."""
        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 2, seed=13)["x"]

        def infer(path, tensors):
            body = json.dumps({"inputs": tensors}).encode()
            request = urllib.request.Request(url(path), data=body, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as answer:
                    return answer.status, json.loads(answer.read())
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read())

        good = {"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.tolist()}
        cases = [
            ("/v2/models/nope/infer", [good], 404,
             "Request for unknown model: 'nope' is not found"),
            ("/v2/models/mlp/versions/9/infer", [good], 404,
             "Request for unknown model: 'mlp' version 9 is not found"),
            ("/v2/models/mlp/versions/one/infer", [good], 400,
             "failed to get model version from specified version string 'one'"),
            ("/v2/models/mlp/infer", [], 400,
             "[request id: <id_unknown>] expected 1 inputs but got 0 inputs for model 'mlp'. "
             "Got input(s) [], but missing required input(s) ['x']. Please provide all "
             "required input(s)."),
            ("/v2/models/mlp/infer", [dict(good, name="X")], 400,
             "unexpected inference input 'X' for model 'mlp'"),
            ("/v2/models/mlp/infer", [dict(good, shape=[1, x.size])], 400,
             f"[request id: <id_unknown>] unexpected shape for input 'x' for model 'mlp'. "
             f"Expected [-1,{x.shape[1]}], got [1,{x.size}]"),
            ("/v2/models/mlp/infer", [dict(good, datatype="INT32", data=[0] * x.size)], 400,
             "[request id: <id_unknown>] inference input 'x' data-type is 'INT32', but model "
             "'mlp' expects 'FP32'"),
        ]
        for path, tensors, status, text in cases:
            with self.subTest(path=path, text=text):
                code, body = infer(path, tensors)
                self.assertEqual(code, status, body)
                self.assertTrue(body["error"].startswith(text), f"SERVER: {body['error']!r}")
        code, body = curl(url("/v2/models/nope/config"))
        self.assertEqual(code, 404)
        self.assertTrue(json.loads(body)["error"].startswith(
            "Request for unknown model: 'nope' is not found"), body)
        code, body = curl(url("/v2/models/nope/ready"))
        self.assertEqual((code, json.loads(body)), (400, {"error": "Model version not ready"}))

    def test_bad_json_is_400_and_the_server_keeps_serving(self):
        code, body = curl("-X", "POST", url("/v2/models/mlp/infer"), "-d", "{not json")
        self.assertEqual(code, 400)
        self.assertIn("not valid JSON", json.loads(body)["error"])
        self.assertEqual(curl(url("/v2/health/ready"))[0], 200)


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
