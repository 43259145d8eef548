"""graphserve's listeners, against the real binary on the host executor:

  - a port another process holds (gRPC, HTTP/REST or metrics) is refused
    before any model loads: exit 1, one line naming the address and why, no
    crash (a failed start used to segfault in teardown);
  - a second graphserve on a running one's gRPC port is refused, unless both
    pass --reuse-grpc-port (Triton's flag), when both serve;
  - a --host that is not an address of this machine is refused;
  - --grpc-address unix:PATH serves Triton's Python client on a Unix domain
    socket beside TCP: ServerLive, metadata and an inference checked against
    onnxruntime.

    bazel test //tests:ports_and_sockets_test \\
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

A failing assertion whose message starts with "SERVER:" means graphserve
behaved differently from what the message says it should.
"""

import os
import socket
import subprocess
import sys
import unittest

import numpy as np
import tritonclient.grpc as grpcclient

import graphserve_process as gp

# A refused start checks its ports before loading anything: it ends in
# moments, and this bounds a hang.
REFUSAL_TIMEOUT_S = 30
CALL_TIMEOUT_S = 30
# TEST-NET-1 (RFC 5737): never an address of this machine.
FOREIGN_HOST = "192.0.2.1"

SERVER_BINARY = MAKE_REPOSITORY = None
_repository = None


def setUpModule():
    global _repository
    _repository = gp.make_demo_repository(MAKE_REPOSITORY)


def held_port():
    """A listening socket on 127.0.0.1 without SO_REUSEPORT: another server."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


def run_to_exit(flags):
    """graphserve with the test's base flags plus `flags`, to its exit."""
    command = [SERVER_BINARY, "--model-repository", _repository, "--device", "cpu",
               "--host", "127.0.0.1", "--grpc-port", "0", "--http-port", "0",
               "--metrics-port", "0", *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=REFUSAL_TIMEOUT_S)


class PortsAndSocketsTest(unittest.TestCase):

    def assert_refused(self, done, expected, what):
        output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        self.assertEqual(done.returncode, 1,
                         f"SERVER: {what}: exit {done.returncode}, expected 1 "
                         f"(negative: killed by a signal)\n{output}")
        self.assertIn(expected, done.stderr, f"SERVER: {what}: the reason\n{output}")
        self.assertNotIn("loading model", done.stdout,
                         f"SERVER: {what}: the ports are checked before the models load")

    def test_a_port_in_use_is_refused_naming_it(self):
        advice = {"--grpc-port": "--reuse-grpc-port shares it, --grpc-port picks another port",
                  "--http-port": "--reuse-http-port shares it, --http-port picks another port",
                  "--metrics-port": "--metrics-port picks another port"}
        for flag, hint in advice.items():
            with self.subTest(flag), held_port() as holder:
                port = holder.getsockname()[1]
                done = run_to_exit([flag, str(port)])
                self.assert_refused(
                    done, f"graphserve: cannot listen on 127.0.0.1:{port}: address in use "
                          f"(another server? {hint})", f"{flag} {port} held")

    def test_a_foreign_host_is_refused(self):
        done = run_to_exit(["--host", FOREIGN_HOST])
        self.assert_refused(done, f"--host {FOREIGN_HOST} is not an address of this machine",
                            f"--host {FOREIGN_HOST}")

    def test_a_second_server_shares_the_grpc_port_only_when_both_ask(self):
        with gp.ServerProcess(SERVER_BINARY, _repository) as first:
            done = run_to_exit(["--grpc-port", str(first.port), "--reuse-grpc-port"])
            self.assert_refused(done, f"cannot listen on 127.0.0.1:{first.port}: address in use",
                                "a second server on a port the first does not share")
            self.assertIsNone(first.process.poll(), "SERVER: the first server keeps serving")
        sharing = ["--reuse-grpc-port"]
        with gp.ServerProcess(SERVER_BINARY, _repository, sharing) as first:
            with gp.ServerProcess(SERVER_BINARY, _repository,
                                  [*sharing, "--grpc-port", str(first.port)]) as second:
                self.assertEqual(second.port, first.port)
                client = grpcclient.InferenceServerClient(url=first.url)
                self.assertTrue(client.is_server_live(client_timeout=CALL_TIMEOUT_S))
                client.close()
            self.assertEqual(second.process.returncode, 0, second.output())

    def test_unix_socket_serves_beside_tcp(self):
        # Relative to a scratch directory both processes work in: an absolute
        # path under TEST_TMPDIR is longer than a socket path may be.
        scratch = gp.scratch_dir("unix_")
        os.chdir(scratch)
        address = "unix:graphserve.sock"
        with gp.ServerProcess(SERVER_BINARY, _repository, ["--grpc-address", address],
                              cwd=scratch) as server:
            self.assertIn(f"graphserve: serving gRPC also on {address}", server.output())
            client = grpcclient.InferenceServerClient(url=address)
            self.assertTrue(client.is_server_live(client_timeout=CALL_TIMEOUT_S),
                            "SERVER: ServerLive over the Unix socket")
            metadata = client.get_model_metadata("mlp", client_timeout=CALL_TIMEOUT_S)
            self.assertEqual(metadata.name, "mlp")

            batch = 5  # between captured sizes: padded or split
            arrays = gp.random_inputs(gp.DEMO_INPUTS["mlp"], batch, seed=3)
            x = grpcclient.InferInput("x", list(arrays["x"].shape), "FP32")
            x.set_data_from_numpy(arrays["x"])
            result = client.infer("mlp", [x], client_timeout=CALL_TIMEOUT_S)
            want = gp.ReferenceModel(_repository, "mlp").run(arrays)["y"]
            self.assertLess(gp.relative_error(result.as_numpy("y"), want),
                            gp.RELATIVE_TOLERANCE, "SERVER: infer mlp over the Unix socket")
            client.close()
            # TCP still serves.
            tcp = grpcclient.InferenceServerClient(url=server.url)
            self.assertTrue(tcp.is_server_live(client_timeout=CALL_TIMEOUT_S))
            tcp.close()


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
