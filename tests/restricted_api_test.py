"""Triton's restricted APIs on the real graphserve binary, with Triton's own
clients: --grpc-restricted-protocol and --http-restricted-api put categories
of RPCs and routes behind a header; a call without it (or with a wrong value)
is refused with Triton's message, PERMISSION_DENIED on gRPC and 403 on HTTP,
and the same call with the header is served. Categories left out stay open.
The flag may be repeated, one key per group of categories. A malformed spec
stops the server at startup, saying what it wants.

    bazel test //tests:restricted_api_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import json
import queue
import socket
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

CALL_TIMEOUT_S = 30
KEY, VALUE = "admin-key", "s3cret"
# gRPC: the key behind Triton's prefix.
GRPC_HEADERS = {f"triton-grpc-protocol-{KEY}": VALUE}
GRPC_REFUSAL = f"This protocol is restricted, expecting header 'triton-grpc-protocol-{KEY}'"
HTTP_HEADERS = {KEY: VALUE}
HTTP_REFUSAL = f"This API is restricted, expecting header '{KEY}'"
STATS_KEY, STATS_VALUE = "stats-key", "numbers"

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(SERVER_BINARY, MAKE_REPOSITORY, [
        "--model-control-mode=explicit", "--load-model=*",
        # Health is restricted on gRPC only: ServerLive is answered from a
        # completion queue, the others from callbacks.
        f"--grpc-restricted-protocol=health,inference,shared-memory,model-repository:"
        f"{KEY}={VALUE}",
        f"--http-restricted-api=inference,model-repository:{KEY}={VALUE}",
        # A second group with a key of its own, as Triton takes the flag again.
        f"--http-restricted-api=statistics:{STATS_KEY}={STATS_VALUE}",
    ])


def tearDownModule():
    gp.stop_checked(_server)


def mlp_input(module, seed):
    x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 2, seed=seed)["x"]
    tensor = module.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return x, tensor


class GrpcRestrictedTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = grpcclient.InferenceServerClient(_server.url)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def assertRefused(self, call):
        with self.assertRaises(InferenceServerException) as raised:
            call()
        self.assertEqual(raised.exception.status(), "StatusCode.PERMISSION_DENIED")
        self.assertEqual(raised.exception.message(), GRPC_REFUSAL)

    def test_restricted_rpcs_need_the_key(self):
        x, tensor = mlp_input(grpcclient, seed=1)
        cases = [
            ("ServerLive", lambda h: self.client.is_server_live(headers=h)),
            ("ServerReady", lambda h: self.client.is_server_ready(headers=h)),
            ("ModelReady", lambda h: self.client.is_model_ready("mlp", headers=h)),
            ("ModelInfer", lambda h: self.client.infer("mlp", [tensor], headers=h)),
            ("SystemSharedMemoryStatus",
             lambda h: self.client.get_system_shared_memory_status(headers=h)),
            ("RepositoryIndex", lambda h: self.client.get_model_repository_index(headers=h)),
            ("RepositoryModelLoad", lambda h: self.client.load_model("mlp", headers=h)),
        ]
        for name, call in cases:
            with self.subTest(rpc=name):
                self.assertRefused(lambda: call(None))
                self.assertRefused(lambda: call({f"triton-grpc-protocol-{KEY}": "wrong"}))
                self.assertRefused(lambda: call({KEY: VALUE}))  # without Triton's prefix
                call(GRPC_HEADERS)
        want = gp.ReferenceModel(_repository, "mlp").run({"x": x})["y"]
        got = self.client.infer("mlp", [tensor], headers=GRPC_HEADERS).as_numpy("y")
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)

    def test_open_categories_need_nothing(self):
        self.assertEqual(self.client.get_model_metadata("mlp").name, "mlp")
        self.assertEqual(self.client.get_model_config("mlp").config.name, "mlp")
        self.client.get_inference_statistics("mlp")

    def test_a_stream_without_the_key_is_refused(self):
        for headers, refused in ((None, True), (GRPC_HEADERS, False)):
            with self.subTest(headers=headers):
                answers = queue.Queue()
                self.client.start_stream(callback=lambda result, error: answers.put((result,
                                                                                     error)),
                                         headers=headers)
                try:
                    _, tensor = mlp_input(grpcclient, seed=2)
                    try:
                        self.client.async_stream_infer("mlp", [tensor])
                    except InferenceServerException as sent:
                        # The refusal may end the stream before the request
                        # is sent: tritonclient then says so here and passes
                        # the server's status to the callback, as with Triton.
                        self.assertTrue(refused, str(sent))
                    result, error = answers.get(timeout=CALL_TIMEOUT_S)
                finally:
                    self.client.stop_stream()
                if refused:
                    self.assertIsNone(result)
                    self.assertIn(GRPC_REFUSAL, str(error))
                else:
                    self.assertIsNone(error)
                    self.assertEqual(result.as_numpy("y").shape, (2, 1))


class HttpRestrictedTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = httpclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def call(self, path, data=None, headers=None):
        request = urllib.request.Request(
            f"http://127.0.0.1:{_server.http_port}{path}", data=data,
            method="POST" if data is not None else "GET", headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def test_restricted_routes_need_the_header(self):
        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 2, seed=3)["x"]
        infer = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                                        "data": x.tolist()}]}).encode()
        for path, data, key, value in (
                ("/v2/models/mlp/infer", infer, KEY, VALUE),
                ("/v2/models/mlp/stats", None, STATS_KEY, STATS_VALUE),
                ("/v2/models/stats", None, STATS_KEY, STATS_VALUE),
                ("/v2/repository/index", b"", KEY, VALUE),
                ("/v2/repository/models/mlp/load", b"", KEY, VALUE)):
            with self.subTest(path=path):
                other = STATS_KEY if key == KEY else KEY
                for headers in (None, {key: "wrong"}, {other: value}, {"other-key": value}):
                    code, body = self.call(path, data, headers)
                    self.assertEqual(code, 403, body[:300])
                    self.assertEqual(json.loads(body),
                                     {"error": f"This API is restricted, expecting header '{key}'"})
                code, body = self.call(path, data, {key: value})
                self.assertEqual(code, 200, body[:300])
                # Header names are not case-sensitive in HTTP.
                code, body = self.call(path, data, {key.upper(): value})
                self.assertEqual(code, 200, body[:300])

    def test_a_value_holding_a_nul_is_refused(self):
        # cpp-httplib hands header values back through C strings: cut at the
        # NUL, "s3cret\0x" passed for "s3cret". The connection now refuses a
        # NUL anywhere in the head, 400 (RFC 9110 5.5), before any check
        # reads it. Sent raw: urllib refuses NUL.
        for value, want in ((VALUE.encode(), 200), (VALUE.encode() + b"\0x", 400)):
            with socket.create_connection(("127.0.0.1", _server.http_port),
                                          timeout=CALL_TIMEOUT_S) as s:
                s.sendall(b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Length: 0\r\n" + KEY.encode() + b": " + value + b"\r\n\r\n")
                status = int(s.recv(4096).split(b" ", 2)[1])
            self.assertEqual(status, want, value)

    def test_open_routes_need_nothing(self):
        for path in ("/v2/health/live", "/v2/health/ready", "/v2", "/v2/models/mlp",
                     "/v2/models/mlp/config", "/v2/systemsharedmemory/status"):
            with self.subTest(path=path):
                self.assertEqual(self.call(path)[0], 200)

    def test_tritonclient_http_sees_tritons_message(self):
        with self.assertRaises(InferenceServerException) as raised:
            self.client.get_inference_statistics("mlp")
        self.assertEqual(raised.exception.status(), "403")
        self.assertIn(f"This API is restricted, expecting header '{STATS_KEY}'",
                      raised.exception.message())
        self.client.get_inference_statistics("mlp", headers={STATS_KEY: STATS_VALUE})
        x, tensor = mlp_input(httpclient, seed=4)
        with self.assertRaises(InferenceServerException):
            self.client.infer("mlp", [tensor])
        got = self.client.infer("mlp", [tensor], headers=HTTP_HEADERS).as_numpy("y")
        want = gp.ReferenceModel(_repository, "mlp").run({"x": x})["y"]
        self.assertLess(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE)


class BadSpecTest(unittest.TestCase):

    def test_a_bad_spec_stops_the_server_saying_what_it_wants(self):
        for flag, error in (("--http-restricted-api=helth:k=v", "unknown category 'helth'"),
                            ("--grpc-restricted-protocol=health", "wants <categories>:<key>=<value>"),
                            ("--grpc-restricted-protocol=health:Key=v",
                             "cannot be a gRPC metadata key"),
                            (("--http-restricted-api=health:a=1",
                              "--http-restricted-api=metadata,health:b=2"),
                             "the category 'health' is restricted twice")):
            with self.subTest(flag=flag):
                flags = [flag] if isinstance(flag, str) else list(flag)
                done = subprocess.run([SERVER_BINARY, "--device", "cpu", *flags],
                                      capture_output=True, text=True, timeout=CALL_TIMEOUT_S)
                self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
                self.assertIn(error, done.stderr + done.stdout)


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
