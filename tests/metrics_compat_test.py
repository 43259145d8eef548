"""/metrics of the real graphserve binary, read by the official Prometheus
text-format parser (prometheus_client), after requests of known sizes: the
families have the types Prometheus expects, and the counters and histograms
moved by exactly the right amounts.

    bazel test //tests:metrics_compat_test --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
"""

import json
import os
import re
import sys
import unittest
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import graphserve_process as gp

CALL_TIMEOUT_S = 30
ROWS = [1, 1, 3, 7]  # the requests sent, in rows

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(SERVER_BINARY, MAKE_REPOSITORY)
    assert _server.metrics_port, f"SERVER: no 'serving metrics on' line:\n{_server.output()}"
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


def mlp_samples(family, name=None):
    """The samples of `family` labelled model="mlp" (named `name` if given)."""
    return [sample for sample in family.samples
            if sample.labels.get("model") == "mlp" and (name is None or sample.name == name)]


def value(family, name=None, **labels):
    matches = [s.value for s in mlp_samples(family, name)
               if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matches) == 1, f"{family.name} {name} {labels}: {matches}"
    return matches[0]


def bucket(family, name, le):
    """The cumulative count of `family`'s bucket with upper bound `le`."""
    matches = [s.value for s in mlp_samples(family, name) if float(s.labels["le"]) == le]
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
        self.assertEqual(value(self.families["nv_inference_request_failure"], reason="OTHER"), 0)

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
        per_size = {int(s.labels["batch_size"]): s.value for s in mlp_samples(launches)}
        self.assertEqual(sum(per_size.values()), value(self.families["nv_inference_exec_count"]))
        padded = value(self.families["graphserve_padded_rows"])
        launched_rows = sum(size * count for size, count in per_size.items())
        self.assertEqual(launched_rows, sum(ROWS) + padded)


    def test_dashboard_queries_only_exported_metrics(self):
        """deploy/grafana/graphserve.json asks for families /metrics has.

        The GPU gauges exist only on a machine with a GPU; they must be Triton's.
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
        gpu_gauges = {"nv_gpu_utilization", "nv_gpu_memory_total_bytes",
                      "nv_gpu_memory_used_bytes", "nv_gpu_power_usage"}
        ids = [panel["id"] for panel in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        for panel in dashboard["panels"]:
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                for name in re.findall(r"\b((?:nv|graphserve)_[a-z_]+)", target["expr"]):
                    if name.startswith("nv_gpu_"):
                        self.assertIn(name, gpu_gauges, panel["title"])
                    else:
                        self.assertIn(name, exported, f"{panel['title']}: {target['expr']}")


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
