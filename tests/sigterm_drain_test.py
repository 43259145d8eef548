"""SIGTERM drain of the real graphserve binary, seen from Triton's Python
client: a burst of large mlp requests is in flight when the signal arrives.

Expected of the server (server/inference_server.h, "Shutdown order"):
  - every request it had accepted finishes with correct outputs, and at
    least one of them finishes after the signal (so the drain, not luck,
    kept it);
  - no request is lost (each gets an answer) and none fails with anything
    but UNAVAILABLE;
  - from the signal on, health says NOT_SERVING and a new ModelInfer gets
    UNAVAILABLE;
  - the process exits with code 0 before --exit-timeout-secs.

    bazel test //tests:sigterm_drain_test \
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

Without GRAPHSERVE_PYTHON the test fails and says how to set it
(deploy/venv_test.sh). A failing assertion whose message starts with
"SERVER:" names the request, what was expected and what came back.
"""

import sys
import threading
import time
import unittest

import grpc
import tritonclient.grpc as grpcclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

# 16 requests of max_batch_size rows: on the host executor one takes tens to
# hundreds of ms, so the burst keeps both streams busy for a good second
# after the first request finishes, which is when the signal is sent.
BURST = 16
ROWS = gp.DEMO_MAX_BATCH
CALL_TIMEOUT_S = 60  # the whole burst on a loaded two-core machine, with margin
# How long the probes after the signal may take to see the server refuse.
REFUSAL_DEADLINE_S = 10

SERVER_BINARY = MAKE_REPOSITORY = None


def mlp_request(seed, rows=ROWS):
    arrays = gp.random_inputs(gp.DEMO_INPUTS["mlp"], rows, seed)
    tensor = grpcclient.InferInput("x", list(arrays["x"].shape), "FP32")
    tensor.set_data_from_numpy(arrays["x"])
    return arrays, [tensor]


class SigtermDrainTest(unittest.TestCase):

    def test_sigterm_drains_accepted_requests(self):
        repository = gp.make_demo_repository(MAKE_REPOSITORY)
        reference = gp.ReferenceModel(repository, "mlp")
        with gp.ServerProcess(SERVER_BINARY, repository) as server:
            try:
                self.run_drain(server, reference)
            finally:
                sys.stderr.write(f"--- graphserve output ---\n{server.output()}\n--- end ---\n")

    def run_drain(self, server, reference):
        client = grpcclient.InferenceServerClient(url=server.url)
        health_channel = grpc.insecure_channel(server.url)
        health = health_pb2_grpc.HealthStub(health_channel)
        try:
            started = time.monotonic()
            arrays, inputs = mlp_request(seed=0)
            client.infer("mlp", inputs, client_timeout=CALL_TIMEOUT_S)
            print(f"one {ROWS}-row mlp request: {1000 * (time.monotonic() - started):.0f} ms")

            finished = {}  # index -> (monotonic time, result, error)
            changed = threading.Condition()

            def on_done(index, result, error):
                with changed:
                    finished[index] = (time.monotonic(), result, error)
                    changed.notify_all()

            sent = []
            for index in range(BURST):
                arrays, inputs = mlp_request(seed=1 + index)
                sent.append(arrays)
                client.async_infer(
                    "mlp", inputs,
                    callback=lambda result, error, index=index: on_done(index, result, error),
                    client_timeout=CALL_TIMEOUT_S)

            # The first answer shows the server is working through the
            # burst; the others are queued or running: signal now.
            with changed:
                self.assertTrue(changed.wait_for(lambda: finished, timeout=CALL_TIMEOUT_S),
                                "SERVER: no request of the burst finished")
            signalled = time.monotonic()
            server.terminate()
            in_flight_at_signal = BURST - len(finished)
            print(f"SIGTERM with {in_flight_at_signal} of {BURST} requests unanswered")

            self.check_refuses_new_work(client, health)

            with changed:
                self.assertTrue(
                    changed.wait_for(lambda: len(finished) == BURST,
                                     timeout=CALL_TIMEOUT_S),
                    f"SERVER: {BURST - len(finished)} requests of the burst never got an "
                    f"answer (lost)")
            succeeded_after_signal = 0
            refused = 0
            for index in range(BURST):
                when, result, error = finished[index]
                if error is not None:
                    self.assertIn("UNAVAILABLE", error.status(),
                                  f"SERVER: burst request {index} after SIGTERM failed with "
                                  f"{error.status()} '{error.message()}', expected success "
                                  f"or UNAVAILABLE")
                    refused += 1
                    continue
                got = result.as_numpy("y")
                want = reference.run(sent[index])["y"]
                self.assertEqual(got.shape, want.shape)
                relative = gp.relative_error(got, want)
                self.assertLessEqual(relative, gp.RELATIVE_TOLERANCE,
                                     f"SERVER: burst request {index}: output differs from "
                                     f"onnxruntime, relative error {relative:.3g}")
                if when > signalled:
                    succeeded_after_signal += 1
            print(f"burst: {BURST - refused} succeeded ({succeeded_after_signal} after the "
                  f"signal), {refused} refused with UNAVAILABLE")
            self.assertGreaterEqual(
                succeeded_after_signal, 1,
                f"SERVER: {in_flight_at_signal} requests were unanswered at SIGTERM and none "
                f"finished after it: accepted requests were cut off instead of drained")

            code = server.wait(timeout=gp.EXIT_TIMEOUT_S)
            self.assertIsNotNone(code, f"SERVER: still running {gp.EXIT_TIMEOUT_S} s after "
                                       f"SIGTERM with every request answered")
            self.assertEqual(code, 0, "SERVER: exit code after a clean drain")
        finally:
            client.close()
            health_channel.close()

    def check_refuses_new_work(self, client, health):
        """Right after SIGTERM: health leaves SERVING, then ModelInfer is refused."""
        deadline = time.monotonic() + REFUSAL_DEADLINE_S
        seen = None
        while time.monotonic() < deadline:
            try:
                status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status
                if status != health_pb2.HealthCheckResponse.SERVING:
                    seen = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
                    break
            except grpc.RpcError as error:
                # The server may already have stopped listening.
                self.assertEqual(error.code(), grpc.StatusCode.UNAVAILABLE,
                                 f"SERVER: health Check during drain: {error}")
                seen = f"RPC {error.code().name}"
                break
            time.sleep(0.005)
        print(f"health after SIGTERM: {seen}")
        self.assertIsNotNone(seen, f"SERVER: health still SERVING {REFUSAL_DEADLINE_S} s after "
                                   f"SIGTERM")

        _, inputs = mlp_request(seed=99, rows=1)
        with self.assertRaises(InferenceServerException,
                               msg="SERVER: a new ModelInfer after SIGTERM was accepted") as raised:
            client.infer("mlp", inputs, client_timeout=CALL_TIMEOUT_S)
        print(f"new request after SIGTERM: {raised.exception.status()} "
              f"'{raised.exception.message()}'")
        self.assertIn("UNAVAILABLE", raised.exception.status(),
                      f"SERVER: a new ModelInfer after SIGTERM: {raised.exception}")
        try:
            ready = client.is_server_ready(client_timeout=5)
            self.assertFalse(ready, "SERVER: ServerReady is true while draining")
        except InferenceServerException as error:
            self.assertIn("UNAVAILABLE", error.status(), str(error))


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
