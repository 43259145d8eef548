"""gRPC deadlines and cancellation against the real graphserve binary (issue
30, part 2): a request whose deadline passes, or whose client cancels, while
it waits in the queue is never run (Note [Rows nobody waits for] in
server/request_queue.h), counted by the model's statistics; 1 ms deadlines
under load get OK or DEADLINE_EXCEEDED and nothing else, and the server
lives on.

    bazel test //tests:deadlines_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import os
import re
import shutil
import sys
import threading
import time
import unittest

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

CALL_TIMEOUT_S = 30
# The demo's mlp again as "mlp_held": one stream slot and sizes 1 and 64,
# with dynamic batching that holds a lone request HOLD_S for company (64
# rows launch at once), so requests of a row or two wait in the queue far
# longer than their deadline.
HELD_MODEL = "mlp_held"
HOLD_S = 2.0
HELD_CONFIG = f"""
capture {{
  batch_sizes: 1
  batch_sizes: 64
  streams: 1
  schedule: "auto"
}}
dynamic_batching {{
  max_queue_delay_microseconds: {int(HOLD_S * 1e6)}
}}
"""
QUEUED_DEADLINE_S = 0.2  # well inside HOLD_S: expires while queued
QUEUED_REQUESTS = 6  # together 6 rows, far from 64: nothing launches early
LOAD_THREADS = 8
LOAD_REQUESTS_PER_THREAD = 60
LOAD_DEADLINE_S = 0.001  # Triton crashed on 1-4 ms deadlines (server#7368)

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None


def add_held_model(repository):
    path = os.path.join(repository, HELD_MODEL)
    shutil.copytree(os.path.join(repository, "mlp"), path)
    config_path = os.path.join(path, "config.pbtxt")
    with open(config_path) as f:
        config = f.read()
    config = config.replace('name: "mlp"', f'name: "{HELD_MODEL}"')
    config = re.sub(r"\ncapture \{.*?\n\}\n?", HELD_CONFIG, config, flags=re.DOTALL)
    with open(config_path, "w") as f:
        f.write(config)


def setUpModule():
    global _server
    repository = gp.make_demo_repository(MAKE_REPOSITORY)
    add_held_model(repository)
    _server = gp.ServerProcess(SERVER_BINARY, repository).start()


def tearDownModule():
    gp.stop_checked(_server)


def client():
    return grpcclient.InferenceServerClient(url=_server.url)


def inputs(rows, seed):
    x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], rows, seed=seed)["x"]
    tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return [tensor]


def statistics(model):
    """(success, fail, executions, inferences) of `model`'s statistics."""
    stats = client().get_inference_statistics(model, as_json=True)["model_stats"][0]
    inference = stats.get("inference_stats", {})
    return (int(inference.get("success", {}).get("count", 0)),
            int(inference.get("fail", {}).get("count", 0)),
            int(stats.get("execution_count", 0)),
            int(stats.get("inference_count", 0)))


def wait_for_failures(model, failures, before):
    """Statistics once `failures` more requests of `model` failed than in
    `before`, or at the deadline."""
    deadline = time.monotonic() + HOLD_S + CALL_TIMEOUT_S
    while True:
        now = statistics(model)
        if now[1] >= before[1] + failures or time.monotonic() > deadline:
            return now
        time.sleep(0.05)


class QueuedDeadlinesTest(unittest.TestCase):

    def test_a_deadline_passed_in_the_queue_is_not_run(self):
        before = statistics(HELD_MODEL)
        codes = [None] * QUEUED_REQUESTS

        def send(i):
            try:
                client().infer(HELD_MODEL, inputs(1, seed=i), client_timeout=QUEUED_DEADLINE_S)
                codes[i] = "OK"
            except InferenceServerException as error:
                codes[i] = error.status()

        threads = [threading.Thread(target=send, args=(i,)) for i in range(QUEUED_REQUESTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=CALL_TIMEOUT_S)
        self.assertEqual(codes, ["StatusCode.DEADLINE_EXCEEDED"] * QUEUED_REQUESTS)
        # The batch they waited for is due at HOLD_S: by then each is refused.
        after = wait_for_failures(HELD_MODEL, QUEUED_REQUESTS, before)
        self.assertEqual(after[1] - before[1], QUEUED_REQUESTS,
                         f"expired requests not refused: {before} -> {after}")
        self.assertEqual(after[0], before[0], "an expired request ran and succeeded")
        self.assertEqual(after[2], before[2], "an expired request's rows were executed")
        self.assertEqual(after[3], before[3])
        # A request with time to wait still runs after them.
        result = client().infer(HELD_MODEL, inputs(1, seed=99), client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(result.as_numpy("y").shape[0], 1)
        self.assertEqual(statistics(HELD_MODEL)[2], after[2] + 1)

    def test_a_cancelled_request_is_not_run(self):
        before = statistics(HELD_MODEL)
        done = []
        done_lock = threading.Lock()

        def callback(result, error):
            with done_lock:
                done.append("OK" if error is None else error.status())

        c = client()
        calls = [c.async_infer(HELD_MODEL, inputs(1, seed=i), callback,
                               client_timeout=CALL_TIMEOUT_S) for i in range(QUEUED_REQUESTS)]
        # Long enough for the server to queue them (loopback), well inside HOLD_S.
        time.sleep(HOLD_S / 4)
        for call in calls:
            call.cancel()
        after = wait_for_failures(HELD_MODEL, QUEUED_REQUESTS, before)
        self.assertEqual(sorted(done), ["StatusCode.CANCELLED"] * QUEUED_REQUESTS)
        self.assertEqual(after[1] - before[1], QUEUED_REQUESTS,
                         f"cancelled requests not refused: {before} -> {after}")
        self.assertEqual(after[2], before[2], "a cancelled request's rows were executed")


class OneMillisecondDeadlinesTest(unittest.TestCase):

    def test_every_answer_is_ok_or_deadline_exceeded(self):
        before = statistics("mlp")
        outcomes = {}
        lock = threading.Lock()

        def load(thread):
            c = client()
            for i in range(LOAD_REQUESTS_PER_THREAD):
                rows = 1 + (i % 4) * 20  # some need several chunks
                try:
                    c.infer("mlp", inputs(rows, seed=thread * 1000 + i),
                            client_timeout=LOAD_DEADLINE_S)
                    outcome = "OK"
                except InferenceServerException as error:
                    outcome = error.status()
                with lock:
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1

        threads = [threading.Thread(target=load, args=(t,)) for t in range(LOAD_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=CALL_TIMEOUT_S * 4)
        self.assertEqual(sum(outcomes.values()), LOAD_THREADS * LOAD_REQUESTS_PER_THREAD)
        self.assertLessEqual(set(outcomes), {"OK", "StatusCode.DEADLINE_EXCEEDED"}, outcomes)
        self.assertGreater(outcomes.get("StatusCode.DEADLINE_EXCEEDED", 0), 0,
                           "no deadline was hit: the test did not test deadlines")
        # The server lives on and serves, and has answered everything it took.
        c = client()
        self.assertTrue(c.is_server_live())
        result = c.infer("mlp", inputs(2, seed=7), client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(result.as_numpy("y").shape[0], 2)
        # Until the counts settle: the last answers may still be on their way.
        after, deadline = statistics("mlp"), time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = statistics("mlp")
            if now == after:
                break
            after = now
        self.assertGreaterEqual(after[0] - before[0], outcomes.get("OK", 0) + 1)
        self.assertLessEqual(after[0] + after[1] - before[0] - before[1],
                             LOAD_THREADS * LOAD_REQUESTS_PER_THREAD + 1)


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv)
