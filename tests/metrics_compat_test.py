"""/metrics of the real graphserve binary, read by the official Prometheus
text-format parser (prometheus_client), after requests of known sizes: the
families have the types Prometheus expects, and the counters and histograms
moved by exactly the right amounts. Besides the demo's mlp, a copy of it
(mlp_queue) whose queue splits, merges and rejects requests deterministically
checks failures by reason, split requests, merged executions, launches per
stream slot and the re-capture signal.

    bazel test //tests:metrics_compat_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import itertools
import json
import os
import re
import shutil
import sys
import threading
import time
import unittest
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

CALL_TIMEOUT_S = 30
ROWS = [1, 1, 3, 7]  # the requests sent to mlp, in rows
BAD_REQUESTS = 1  # sent to mlp with a wrong shape: failures of reason OTHER
MLP_SIZES = [1, 4, 16, 64, 256]  # the demo's captured sizes (examples/demo_repository.h)
MLP_STREAMS = 2

# mlp again as "mlp_queue", whose queue makes splitting, merging and
# rejecting deterministic: sizes 1 and 4 on one stream slot; dynamic batching
# whose 10 s delay makes a lone request of fewer than 4 rows wait for more
# (far longer than any test takes); priority 2 queues one request at most,
# with the request's own timeout.
QUEUE_MODEL = "mlp_queue"
QUEUE_SIZES = [1, 4]
QUEUE_CONFIG = """
capture {
  batch_sizes: 1
  batch_sizes: 4
  streams: 1
  schedule: "auto"
}
dynamic_batching {
  max_queue_delay_microseconds: 10000000
  priority_levels: 2
  default_priority_level: 1
  priority_queue_policy {
    key: 2
    value { timeout_action: REJECT allow_timeout_override: true max_queue_size: 1 }
  }
}
"""
SPLIT_ROWS = 8  # two chunks of 4: split, not merged
MERGED_ROWS = (1, 3)  # sent together: one chunk of 4 holding both
QUEUED_TIMEOUT_US = 1_000_000  # the timeout of the priority-2 requests
QUEUE_SUCCESSES = 1 + len(MERGED_ROWS)
QUEUE_EXECUTIONS = 2 + 1  # the split request's chunks, the merged chunk
# What each of those chunks could have merged (Note [Demand rows]).
QUEUE_DEMAND_ROWS = [SPLIT_ROWS, SPLIT_ROWS - 4, sum(MERGED_ROWS)]
QUEUE_REJECTED = 2  # one refused by the full queue, one timed out in it

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None
_queue_errors = []  # (gRPC status, message) of the priority-2 requests


def add_queue_model(repository):
    """Copies the demo's mlp as QUEUE_MODEL with QUEUE_CONFIG's queue."""
    path = os.path.join(repository, QUEUE_MODEL)
    shutil.copytree(os.path.join(repository, "mlp"), path)
    config_path = os.path.join(path, "config.pbtxt")
    with open(config_path) as f:
        config = f.read()
    config = config.replace('name: "mlp"', f'name: "{QUEUE_MODEL}"')
    config = re.sub(r"\ncapture \{.*?\n\}\n?", QUEUE_CONFIG, config, flags=re.DOTALL)
    with open(config_path, "w") as f:
        f.write(config)


def queue_infer(rows, seed, **kwargs):
    """One request of `rows` rows to QUEUE_MODEL over gRPC (a client each,
    so threads never share one)."""
    client = grpcclient.InferenceServerClient(url=_server.url)
    x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], rows, seed=seed)["x"]
    tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    return client.infer(QUEUE_MODEL, [tensor], client_timeout=CALL_TIMEOUT_S, **kwargs)


def run_together(*calls):
    """Runs the calls on threads at once; their exceptions, None for success."""
    errors = [None] * len(calls)

    def run(index, call):
        try:
            call()
        except InferenceServerException as error:
            errors[index] = error

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=CALL_TIMEOUT_S)
    return errors


def pending(model):
    families = scrape()
    return sum(s.value for s in families["nv_inference_pending_request_count"].samples
               if s.labels.get("model") == model)


def send_queue_requests():
    """QUEUE_MODEL's known requests: a split one, a merged pair, then two at
    priority 2, the second sent while the first waits in the queue (full: one
    at most) and the first left to time out there."""
    queue_infer(SPLIT_ROWS, seed=10)
    errors = run_together(*[lambda rows=rows: queue_infer(rows, seed=11 + rows)
                            for rows in MERGED_ROWS])
    assert errors == [None] * len(MERGED_ROWS), f"the merged pair failed: {errors}"

    def queued():
        queue_infer(1, seed=20, priority=2, timeout=QUEUED_TIMEOUT_US)

    def refused():
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while pending(QUEUE_MODEL) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        queue_infer(1, seed=21, priority=2, timeout=QUEUED_TIMEOUT_US)

    for error in run_together(queued, refused):
        assert error is not None, "a priority-2 request ran: the queue never refused it"
        _queue_errors.append((error.status(), error.message()))


def setUpModule():
    global _server, _repository
    _repository = gp.make_demo_repository(MAKE_REPOSITORY)
    add_queue_model(_repository)
    _server = gp.ServerProcess(SERVER_BINARY, _repository).start()
    assert _server.http_port, f"SERVER: no 'serving HTTP/REST on' line:\n{_server.output()}"
    assert _server.metrics_port, f"SERVER: no 'serving metrics on' line:\n{_server.output()}"
    client = grpcclient.InferenceServerClient(url=_server.url)
    for _ in range(BAD_REQUESTS):
        wrong = grpcclient.InferInput("x", [1, 511], "FP32")  # mlp takes 512
        wrong.set_data_from_numpy(np.zeros((1, 511), dtype=np.float32))
        try:
            client.infer("mlp", [wrong], client_timeout=CALL_TIMEOUT_S)
            raise AssertionError("SERVER: a request of 511 features instead of 512 succeeded")
        except InferenceServerException as error:
            assert "INVALID_ARGUMENT" in error.status(), error
    send_queue_requests()
    for index, rows in enumerate(ROWS):
        x = gp.random_inputs(gp.DEMO_INPUTS["mlp"], rows, seed=index)["x"]
        body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                                       "data": x.flatten().tolist()}]}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{_server.http_port}/v2/models/mlp/infer", data=body,
            method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as response:
            assert response.status == 200, response.read()[:300]


def tearDownModule():
    gp.stop_checked(_server)


def scrape():
    """{family name: family} of /metrics, parsed by prometheus_client."""
    with urllib.request.urlopen(f"http://127.0.0.1:{_server.metrics_port}/metrics",
                                timeout=CALL_TIMEOUT_S) as response:
        text = response.read().decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def mlp_samples(family, name=None, model="mlp"):
    """The samples of `family` labelled `model` (named `name` if given)."""
    return [sample for sample in family.samples
            if sample.labels.get("model") == model and (name is None or sample.name == name)]


def value(family, name=None, model="mlp", **labels):
    matches = [s.value for s in mlp_samples(family, name, model)
               if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matches) == 1, f"{family.name} {name} {model} {labels}: {matches}"
    return matches[0]


def padded_rows(requests, sizes):
    """Expected padded rows per request of `requests` (rows each) served by
    `sizes`, by planning/batch_sizes.h's serving model, written out again
    here: above the largest size C, chunks of C and a padded remainder."""
    top = max(sizes)
    total = 0
    for rows in requests:
        rest = rows if rows <= top else rows % top
        if rest:
            total += min(s for s in sizes if s >= rest) - rest
    return total / len(requests)


def best_padded_rows(requests, count):
    """The least padded_rows over every set of at most `count` sizes whose
    largest is the largest request (as ChooseBatchSizes takes it), by brute
    force."""
    top = max(requests)
    return min(padded_rows(requests, list(others) + [top])
               for n in range(count) for others in itertools.combinations(range(1, top), n))


def bucket(family, name, le, model="mlp"):
    """The cumulative count of `family`'s bucket with upper bound `le`."""
    matches = [s.value for s in mlp_samples(family, name, model) if float(s.labels["le"]) == le]
    assert len(matches) == 1, f"{family.name} {name} le={le}: {matches}"
    return matches[0]


class MetricsTest(unittest.TestCase):

    def setUp(self):
        self.families = scrape()

    def test_triton_counters_count_the_requests(self):
        success = self.families["nv_inference_request_success"]
        self.assertEqual(success.type, "counter")
        self.assertEqual(value(success), len(ROWS))
        self.assertEqual(value(self.families["nv_inference_count"]), sum(ROWS))

    def test_failures_are_counted_by_triton_reason(self):
        failure = self.families["nv_inference_request_failure"]
        self.assertEqual(failure.type, "counter")
        # mlp: the requests of the wrong shape, a bad request: OTHER.
        self.assertEqual({s.labels["reason"]: s.value for s in mlp_samples(failure)},
                         {"REJECTED": 0, "CANCELED": 0, "BACKEND": 0, "OTHER": BAD_REQUESTS})
        # mlp_queue: one refused by its full queue, one timed out in it.
        self.assertEqual(sorted(status for status, _ in _queue_errors),
                         ["StatusCode.UNAVAILABLE"] * QUEUE_REJECTED, _queue_errors)
        messages = " | ".join(message for _, message in _queue_errors)
        self.assertIn("Exceeds maximum queue size", messages)
        self.assertIn("Request timeout expired", messages)
        queue_failures = mlp_samples(failure, model=QUEUE_MODEL)
        self.assertEqual({s.labels["reason"]: s.value for s in queue_failures},
                         {"REJECTED": QUEUE_REJECTED, "CANCELED": 0, "BACKEND": 0, "OTHER": 0})
        self.assertEqual(value(self.families["nv_inference_request_success"], model=QUEUE_MODEL),
                         QUEUE_SUCCESSES)

    def test_split_requests_and_merged_executions(self):
        split = self.families["graphserve_split_requests"]  # the parser drops _total
        merged = self.families["graphserve_merged_executions"]
        self.assertEqual((split.type, merged.type), ("counter", "counter"))
        # mlp: every request fits one captured size, one request a chunk.
        self.assertEqual(value(split), 0)
        self.assertEqual(value(merged), 0)
        # mlp_queue: 8 rows as two chunks of 4, and 1 + 3 rows in one.
        self.assertEqual(value(split, model=QUEUE_MODEL), 1)
        self.assertEqual(value(merged, model=QUEUE_MODEL), 1)
        self.assertEqual(value(self.families["nv_inference_exec_count"], model=QUEUE_MODEL),
                         QUEUE_EXECUTIONS)
        self.assertEqual(value(self.families["graphserve_padded_rows"], model=QUEUE_MODEL), 0)

    def test_launches_per_size_and_stream(self):
        launches = self.families["graphserve_graph_launches"]
        per_slot = {(int(s.labels["batch_size"]), int(s.labels["stream"])): s.value
                    for s in mlp_samples(launches)}
        # Every captured size on every stream slot, launched or not.
        self.assertEqual(set(per_slot),
                         set(itertools.product(MLP_SIZES, range(MLP_STREAMS))))
        self.assertEqual(sum(per_slot.values()), value(self.families["nv_inference_exec_count"]))
        # mlp_queue's one slot ran all its chunks, each at 4.
        self.assertEqual({(int(s.labels["batch_size"]), int(s.labels["stream"])): s.value
                          for s in mlp_samples(launches, model=QUEUE_MODEL)},
                         {(1, 0): 0, (4, 0): QUEUE_EXECUTIONS})

    def test_recapture_signal_is_the_expected_padding(self):
        """graphserve_expected_padded_rows against padded_rows above: mlp's
        rows all fit one bucket of their own, so the gauges are exact."""
        gauge = self.families["graphserve_expected_padded_rows"]
        self.assertEqual(gauge.type, "gauge")
        self.assertAlmostEqual(value(gauge, sizes="current"), padded_rows(ROWS, MLP_SIZES))
        self.assertAlmostEqual(value(gauge, sizes="optimal"),
                               best_padded_rows(ROWS, len(MLP_SIZES)))
        self.assertGreater(value(gauge, sizes="current"), 0)  # 3 rows pad to 4, 7 to 16
        # mlp_queue: its largest size (4) is below its largest request (8),
        # so its current sizes split what the optimal ones would pad. The
        # gauges plan from the requests' rows under dynamic batching too
        # (Note [Demand rows]).
        queue_rows = [SPLIT_ROWS, *MERGED_ROWS]
        self.assertAlmostEqual(value(gauge, model=QUEUE_MODEL, sizes="current"),
                               padded_rows(queue_rows, QUEUE_SIZES))
        self.assertAlmostEqual(value(gauge, model=QUEUE_MODEL, sizes="optimal"),
                               best_padded_rows(queue_rows, len(QUEUE_SIZES)))

    def test_chunk_demand_rows_under_dynamic_batching(self):
        """graphserve_chunk_demand_rows: for mlp_queue, the rows each chunk
        could have merged (8 queued for the split request's first chunk, its
        4 left for the second, 1 + 3 for the merged one); none for mlp,
        which does not batch dynamically."""
        demand = self.families["graphserve_chunk_demand_rows"]
        self.assertEqual(demand.type, "histogram")
        name = "graphserve_chunk_demand_rows_bucket"
        self.assertEqual(bucket(demand, name, 3, model=QUEUE_MODEL), 0)
        self.assertEqual(bucket(demand, name, 4, model=QUEUE_MODEL), 2)
        self.assertEqual(bucket(demand, name, 8, model=QUEUE_MODEL), 3)
        self.assertEqual(value(demand, "graphserve_chunk_demand_rows_count", model=QUEUE_MODEL),
                         len(QUEUE_DEMAND_ROWS))
        self.assertEqual(value(demand, "graphserve_chunk_demand_rows_sum", model=QUEUE_MODEL),
                         sum(QUEUE_DEMAND_ROWS))
        self.assertEqual(value(demand, "graphserve_chunk_demand_rows_count"), 0)

    def test_rows_histogram_is_the_request_sizes(self):
        rows = self.families["graphserve_request_rows"]
        self.assertEqual(rows.type, "histogram")
        name = "graphserve_request_rows_bucket"
        self.assertEqual(bucket(rows, name, 1), 2)
        self.assertEqual(bucket(rows, name, 2), 2)
        self.assertEqual(bucket(rows, name, 3), 3)
        self.assertEqual(bucket(rows, name, 7), 4)
        self.assertEqual(bucket(rows, name, float("inf")), 4)
        self.assertEqual(value(rows, "graphserve_request_rows_count"), len(ROWS))
        self.assertEqual(value(rows, "graphserve_request_rows_sum"), sum(ROWS))

    def test_no_length_histogram_without_a_shape_dim(self):
        """graphserve_request_length is a histogram of models with one shape
        dim only (Note [Live length histogram] in server/model_counters.h):
        the demo's models have none, so the family has no samples."""
        lengths = self.families["graphserve_request_length"]
        self.assertEqual(lengths.type, "histogram")
        self.assertEqual(lengths.samples, [])

    def test_latency_histogram_has_every_request(self):
        latency = self.families["graphserve_request_duration_us"]
        self.assertEqual(latency.type, "histogram")
        self.assertEqual(value(latency, "graphserve_request_duration_us_count"), len(ROWS))
        buckets = sorted((float(s.labels["le"]), s.value)
                         for s in mlp_samples(latency, "graphserve_request_duration_us_bucket"))
        counts = [count for _, count in buckets]
        self.assertEqual(counts, sorted(counts), "cumulative counts never decrease")
        self.assertEqual(counts[-1], len(ROWS))

    def test_launched_rows_are_real_rows_plus_padding(self):
        launches = self.families["graphserve_graph_launches"]  # the parser drops _total
        self.assertEqual(launches.type, "counter")
        per_slot = [(int(s.labels["batch_size"]), s.value) for s in mlp_samples(launches)]
        self.assertEqual(sum(count for _, count in per_slot),
                         value(self.families["nv_inference_exec_count"]))
        padded = value(self.families["graphserve_padded_rows"])
        launched_rows = sum(size * count for size, count in per_slot)
        self.assertEqual(launched_rows, sum(ROWS) + padded)


    def test_host_gauges_are_tritons(self):
        """Triton's CPU and pinned-pool gauges, one unlabelled sample each;
        the memory against /proc/meminfo read here, the pool as Note [Pinned
        memory pool] in server/metrics.h defines it."""
        names = ["nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes",
                 "nv_pinned_memory_pool_total_bytes", "nv_pinned_memory_pool_used_bytes"]
        for name in names:
            family = self.families[name]
            self.assertEqual(family.type, "gauge", name)
            self.assertEqual([sample.labels for sample in family.samples], [{}], name)
        host = {name: self.families[name].samples[0].value for name in names}
        self.assertGreaterEqual(host["nv_cpu_utilization"], 0)
        self.assertLessEqual(host["nv_cpu_utilization"], 1)
        with open("/proc/meminfo") as f:
            meminfo = dict(line.split(":", 1) for line in f.read().splitlines())
        mem_total = int(meminfo["MemTotal"].split()[0]) * 1024
        self.assertEqual(host["nv_cpu_memory_total_bytes"], mem_total)
        self.assertGreater(host["nv_cpu_memory_used_bytes"], 0)
        self.assertLessEqual(host["nv_cpu_memory_used_bytes"], mem_total)
        # Staging is held for a model's life: all of it used.
        pinned = host["nv_pinned_memory_pool_total_bytes"]
        self.assertEqual(host["nv_pinned_memory_pool_used_bytes"], pinned)
        if "host executor (no GPU)" in _server.output():
            self.assertEqual(pinned, 0, "SERVER: the host executor pins nothing")
        else:
            self.assertGreater(pinned, 0, "SERVER: models on a GPU stage through pinned memory")

    def test_dashboard_queries_only_exported_metrics(self):
        """deploy/grafana/graphserve.json asks for families /metrics has.

        The GPU families exist only on a machine with a GPU; they must be Triton's.
        """
        path = os.path.join(os.environ.get("TEST_SRCDIR", "."),
                            os.environ.get("TEST_WORKSPACE", "graphserve"),
                            "deploy/grafana/graphserve.json")
        with open(path) as f:
            dashboard = json.load(f)
        # Names as the text has them (the parser adds _total to counters;
        # Triton's counters, and so PromQL queries, have none).
        with urllib.request.urlopen(f"http://127.0.0.1:{_server.metrics_port}/metrics",
                                    timeout=CALL_TIMEOUT_S) as response:
            text = response.read().decode()
        exported = {re.split(r"[{ ]", line, maxsplit=1)[0]
                    for line in text.splitlines() if line and not line.startswith("#")}
        gpu_families = {"nv_gpu_utilization", "nv_gpu_memory_total_bytes",
                        "nv_gpu_memory_used_bytes", "nv_gpu_power_usage", "nv_gpu_power_limit",
                        "nv_energy_consumption"}
        ids = [panel["id"] for panel in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        for panel in dashboard["panels"]:
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                for name in re.findall(r"\b((?:nv|graphserve)_[a-z_]+)", target["expr"]):
                    if name in gpu_families or name.startswith("nv_gpu_"):
                        self.assertIn(name, gpu_families, panel["title"])
                    else:
                        self.assertIn(name, exported, f"{panel['title']}: {target['expr']}")


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
