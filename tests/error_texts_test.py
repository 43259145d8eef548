"""What hostile names and broken configs can make the real graphserve binary
say (issue 30, finding 8), through tritonclient over gRPC and HTTP: an
error text of megabytes arrives bounded with its code (Note [Bounded error
texts] in server/client_text.h); a config.pbtxt of bytes that are not UTF-8
leaves the repository index decodable; loading `mlp\\0x` leaves no phantom
entry.

    bazel test //tests:error_texts_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import os
import shutil
import sys
import unittest

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

ERROR_TEXT_LIMIT = 4096  # kErrorTextLimit
HUGE_DIMS = 1_000_000  # a config whose refusal quotes every dim: megabytes
NUL_NAME = "mlp\0x"

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None


def add_broken_models(repository):
    mlp = os.path.join(repository, "mlp")
    # "huge": mlp with an input of a million dims, refused at load.
    huge = os.path.join(repository, "huge")
    shutil.copytree(mlp, huge)
    with open(os.path.join(huge, "config.pbtxt")) as f:
        config = f.read().replace('name: "mlp"', 'name: "huge"')
    config = config.replace("  dims: 512\n", "".join("  dims: 1\n" for _ in range(HUGE_DIMS)), 1)
    with open(os.path.join(huge, "config.pbtxt"), "w") as f:
        f.write(config)
    # "binary": a config.pbtxt of bytes that are not UTF-8.
    binary = os.path.join(repository, "binary")
    shutil.copytree(mlp, binary)
    with open(os.path.join(binary, "config.pbtxt"), "wb") as f:
        f.write(b'name: "binary"\n\xff\xfe\xc3(\x80 max_batch_size: 8\n')


def setUpModule():
    global _server
    repository = gp.make_demo_repository(MAKE_REPOSITORY)
    add_broken_models(repository)
    _server = gp.ServerProcess(SERVER_BINARY, repository,
                               ("--model-control-mode=explicit", "--load-model", "mlp")).start()
    assert _server.http_port, _server.output()


def tearDownModule():
    gp.stop_checked(_server)


class ErrorTextsTest(unittest.TestCase):

    def setUp(self):
        self.grpc = grpcclient.InferenceServerClient(url=_server.url)
        self.http = httpclient.InferenceServerClient(url=f"127.0.0.1:{_server.http_port}")

    def test_a_huge_error_text_arrives_bounded_with_its_code(self):
        with self.assertRaises(InferenceServerException) as raised:
            self.grpc.load_model("huge")
        # Unbounded, the client refused the status as RESOURCE_EXHAUSTED.
        self.assertEqual(raised.exception.status(), "StatusCode.INVALID_ARGUMENT",
                         raised.exception.message()[:300])
        message = raised.exception.message()
        self.assertLessEqual(len(message.encode()), ERROR_TEXT_LIMIT)
        self.assertIn("(message cut:", message)
        with self.assertRaises(InferenceServerException) as raised:
            self.http.load_model("huge")
        self.assertLessEqual(len(raised.exception.message().encode()), ERROR_TEXT_LIMIT)

    def test_a_binary_config_leaves_the_index_decodable(self):
        with self.assertRaises(InferenceServerException):
            self.grpc.load_model("binary")
        # Both clients decode the whole index, the failed model's reason included.
        for index in (self.grpc.get_model_repository_index(as_json=True).get("models", []),
                      self.http.get_model_repository_index()):
            by_name = {m["name"]: m for m in index}
            self.assertIn("mlp", by_name)
            self.assertEqual(by_name["binary"].get("state"), "UNAVAILABLE", by_name["binary"])
            self.assertTrue(by_name["binary"].get("reason"))

    def test_a_name_with_a_nul_loads_nothing(self):
        with self.assertRaises(InferenceServerException) as raised:
            self.grpc.load_model(NUL_NAME)
        self.assertIn("failed to poll from model repository", raised.exception.message())
        names = [m["name"] for m in
                 self.grpc.get_model_repository_index(as_json=True).get("models", [])]
        self.assertNotIn(NUL_NAME, names)
        self.assertFalse(self.grpc.is_model_ready(NUL_NAME))


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv)
