"""What hostile names and broken configs can make the real graphserve binary
say (issue 30, finding 8), through tritonclient over gRPC and HTTP: an
error text of megabytes arrives bounded with its code (Note [Bounded error
texts] in server/client_text.h); a config.pbtxt of bytes that are not UTF-8
leaves the repository index decodable; loading `mlp\\0x` leaves no phantom
entry; no error text shows where the server keeps its models (Note [Server
paths in error texts]), and a config.pbtxt linked to a file outside its model
directory is not read, so its words reach no client (Note [Configuration
files stay in the model directory]).

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

SECRET_WORD = "only_the_server_may_read_this"  # the first word of a file outside the repository

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


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
    # "linked": mlp with its config.pbtxt a link to a file outside the
    # repository, as a link to /etc/passwd.
    linked = os.path.join(repository, "linked")
    shutil.copytree(mlp, linked)
    outside = os.path.join(os.path.dirname(os.path.abspath(repository)), "outside_the_repository")
    with open(outside, "w") as f:
        f.write(f"{SECRET_WORD}:x:0:0\n")
    os.remove(os.path.join(linked, "config.pbtxt"))
    os.symlink(outside, os.path.join(linked, "config.pbtxt"))
    # "unversioned": mlp without its version directory: the error names the
    # path it looked for.
    unversioned = os.path.join(repository, "unversioned")
    shutil.copytree(mlp, unversioned)
    shutil.rmtree(os.path.join(unversioned, "1"))
    with open(os.path.join(unversioned, "config.pbtxt")) as f:
        config = f.read().replace('name: "mlp"', 'name: "unversioned"')
    with open(os.path.join(unversioned, "config.pbtxt"), "w") as f:
        f.write(config)


def setUpModule():
    global _server, _repository
    repository = gp.make_demo_repository(MAKE_REPOSITORY)
    _repository = os.path.realpath(repository)
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

    def assert_no_server_path(self, text):
        self.assertNotIn(_repository, text)
        self.assertNotIn(os.path.dirname(_repository), text)

    def test_error_texts_show_no_server_paths(self):
        for client in (self.grpc, self.http):
            with self.assertRaises(InferenceServerException) as raised:
                client.load_model("unversioned")
            message = raised.exception.message()
            self.assert_no_server_path(message)
            # The path relative to the repository still says what is missing.
            self.assertIn("unversioned/1/model.onnx", message)
        reasons = {m["name"]: m.get("reason", "") for m in
                   self.grpc.get_model_repository_index(as_json=True).get("models", [])}
        self.assertIn("unversioned/1/model.onnx", reasons["unversioned"])
        for reason in reasons.values():
            self.assert_no_server_path(reason)

    def test_a_config_linked_outside_its_directory_is_not_read(self):
        for client in (self.grpc, self.http):
            with self.assertRaises(InferenceServerException) as raised:
                client.load_model("linked")
            message = raised.exception.message()
            self.assertNotIn(SECRET_WORD, message)
            self.assertIn("leads outside the directory of model 'linked'", message)
            self.assert_no_server_path(message)
        self.assertFalse(self.grpc.is_model_ready("linked"))


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv)
