"""Compressed gRPC requests against the real graphserve binary (issue 30,
finding 5; Note [Compressed gRPC requests] in server/inference_server.cc):
gRPC inflates a compressed message whole before its size limit applies, so
by default the server refuses them UNIMPLEMENTED before reading one, and a
small gzip request that inflates to 256 MiB costs it nothing; with
--grpc-accept-compressed-requests they are inflated and answered right.

    bazel test //tests:grpc_compressed_requests_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import sys
import unittest

import grpc
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc

import graphserve_process as gp

INFLATED_BYTES = 256 << 20  # what the hostile request inflates to
RSS_GROWTH_LIMIT_MB = 50  # inflating it would cost INFLATED_BYTES
CALL_TIMEOUT_S = 60

SERVER_BINARY = MAKE_REPOSITORY = None


def peak_rss_mb(server):
    with open(f"/proc/{server.process.pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def bomb():
    """A ModelInfer of mlp whose raw contents are INFLATED_BYTES of zeros:
    about 256 KB once gzip has compressed it."""
    request = service_pb2.ModelInferRequest(model_name="mlp")
    x = request.inputs.add()
    x.name = "x"
    x.datatype = "FP32"
    x.shape.extend([INFLATED_BYTES // (512 * 4), 512])
    request.raw_input_contents.append(b"\0" * INFLATED_BYTES)
    return request


def send_compressed(server, request):
    """(code, details) of `request` sent gzip-compressed."""
    channel = grpc.insecure_channel(server.url,
                                    options=[("grpc.max_send_message_length", -1)])
    try:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        stub.ModelInfer(request, compression=grpc.Compression.Gzip, timeout=CALL_TIMEOUT_S)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as error:
        return error.code(), error.details()
    finally:
        channel.close()


def infer_mlp(server, rows, seed, compression):
    """mlp's answer to `rows` random rows, and onnxruntime's."""
    x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], rows, seed=seed)["x"]
    client = grpcclient.InferenceServerClient(server.url)
    try:
        tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        result = client.infer("mlp", [tensor], compression_algorithm=compression,
                              client_timeout=CALL_TIMEOUT_S)
        return result.as_numpy("y"), x
    finally:
        client.close()


class RefusedByDefaultTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, cls.repository = gp.start_demo_server(SERVER_BINARY, MAKE_REPOSITORY)

    @classmethod
    def tearDownClass(cls):
        gp.stop_checked(cls.server)

    def test_a_compressed_request_is_refused_before_it_is_inflated(self):
        before = peak_rss_mb(self.server)
        code, details = send_compressed(self.server, bomb())
        grown = peak_rss_mb(self.server) - before
        self.assertEqual(code, grpc.StatusCode.UNIMPLEMENTED, details)
        self.assertIn("Compression algorithm 'gzip' is disabled", details)
        self.assertLess(grown, RSS_GROWTH_LIMIT_MB,
                        f"a gzip request inflating to {INFLATED_BYTES >> 20} MiB grew the "
                        f"server's peak RSS by {grown} MB")

    def test_tritonclients_compressed_request_gets_the_same_answer(self):
        with self.assertRaises(grpcclient.InferenceServerException) as refused:
            infer_mlp(self.server, 2, seed=1, compression="gzip")
        self.assertIn("is disabled", str(refused.exception))

    def test_uncompressed_requests_are_served(self):
        y, x = infer_mlp(self.server, 3, seed=2, compression=None)
        want = gp.ReferenceModel(self.repository, "mlp").run({"x": x})["y"]
        self.assertLessEqual(gp.relative_error(y, want), gp.RELATIVE_TOLERANCE)


class AcceptedWhenAskedTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, cls.repository = gp.start_demo_server(
            SERVER_BINARY, MAKE_REPOSITORY, ("--grpc-accept-compressed-requests",))

    @classmethod
    def tearDownClass(cls):
        gp.stop_checked(cls.server)

    def test_compressed_requests_are_inflated_and_answered(self):
        reference = gp.ReferenceModel(self.repository, "mlp")
        for compression in ("gzip", "deflate"):
            y, x = infer_mlp(self.server, 4, seed=3, compression=compression)
            self.assertLessEqual(gp.relative_error(y, reference.run({"x": x})["y"]),
                                 gp.RELATIVE_TOLERANCE, compression)

    def test_the_log_says_what_accepting_them_costs(self):
        self.assertIn("gRPC accepts gzip- and deflate-compressed requests", self.server.output())


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv)
