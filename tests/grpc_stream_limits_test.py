"""ModelStreamInfer limits on the real graphserve binary (issue 30, finding 5
and part 2): streams open at once (--grpc-max-open-streams), one more
refused RESOURCE_EXHAUSTED as it opens; a stream bounded to owe its client
one byte of answers (--grpc-max-stream-owed-bytes) still serves a client
that reads its answers, one at a time.

    bazel test //tests:grpc_stream_limits_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import queue
import sys
import time
import unittest

import tritonclient.grpc as grpcclient

import graphserve_process as gp

MAX_OPEN_STREAMS = 2
OWED_BYTES = 1  # the tightest bound: one answer at a time
CALL_TIMEOUT_S = 30

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None


def setUpModule():
    global _server
    _server, _ = gp.start_demo_server(
        SERVER_BINARY, MAKE_REPOSITORY,
        ("--grpc-max-open-streams", str(MAX_OPEN_STREAMS),
         "--grpc-max-stream-owed-bytes", str(OWED_BYTES)))


def tearDownModule():
    gp.stop_checked(_server)


def inputs(rows, seed):
    x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], rows, seed=seed)["x"]
    tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return [tensor]


class Stream:
    """One tritonclient stream and the answers it got."""

    def __init__(self):
        self.client = grpcclient.InferenceServerClient(url=_server.url)
        self.answers = queue.Queue()
        self.client.start_stream(callback=lambda result, error: self.answers.put((result, error)))

    def infer(self, rows, seed):
        self.client.async_stream_infer("mlp", inputs(rows, seed))
        return self.answers.get(timeout=CALL_TIMEOUT_S)

    def close(self):
        self.client.stop_stream()
        self.client.close()


class StreamLimitsTest(unittest.TestCase):

    def test_one_stream_past_the_limit_is_refused_as_it_opens(self):
        open_streams = [Stream() for _ in range(MAX_OPEN_STREAMS)]
        for i, stream in enumerate(open_streams):
            result, error = stream.infer(1, seed=i)
            self.assertIsNone(error)
        extra = Stream()
        # Finished as it opens, before any request: the callback says why.
        result, error = extra.answers.get(timeout=CALL_TIMEOUT_S)
        self.assertIsNotNone(error, "a stream past --grpc-max-open-streams was served")
        self.assertEqual(error.status(), "StatusCode.RESOURCE_EXHAUSTED", error.message())
        self.assertIn("--grpc-max-open-streams", error.message())
        extra.close()
        # A stream closed frees its place.
        open_streams[0].close()
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            again = Stream()
            result, error = again.infer(1, seed=10)
            again.close()
            if error is None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertIsNone(error)
        for stream in open_streams[1:]:
            stream.close()

    def test_a_reading_client_is_served_one_owed_byte_at_a_time(self):
        stream = Stream()
        for i in range(20):
            result, error = stream.infer(2, seed=i)
            self.assertIsNone(error)
            self.assertEqual(result.as_numpy("y").shape, (2, 1))
        stream.close()


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv)
