"""tritonserver's command line given to graphserve unchanged, against the
real binary on the host executor:

  - a Helm-chart style Triton command line starts and serves: the flags
    that do not apply log one line each (in the --log-file, in ISO8601), and
    repeated --load-model loads every model named, and --allow-cpu-metrics=false
    drops the nv_cpu_* families from /metrics;
  - each listener binds the address of its Triton flag (--http-address,
    --metrics-address, --grpc-address): it answers there and nowhere else;
  - repeated --model-repository serves the models of each; a model in two
    repositories is refused naming both;
  - --allow-grpc=false serves HTTP/REST alone;
  - an unknown flag names the closest known one (exit 2).

    bazel test //tests:triton_command_line_test \\
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

A failing assertion whose message starts with "SERVER:" means graphserve
behaved differently from what the message says it should.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

import tritonclient.grpc as grpcclient

import graphserve_process as gp

CALL_TIMEOUT_S = 20
REFUSAL_TIMEOUT_S = 30

SERVER_BINARY = MAKE_REPOSITORY = None
_repository = None


def setUpModule():
    global _repository
    _repository = gp.make_demo_repository(MAKE_REPOSITORY)


def http_get(host, port, path):
    """(status, body) of GET http://host:port/path."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=CALL_TIMEOUT_S) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def refuses_connections(host, port):
    """True when nothing listens on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(CALL_TIMEOUT_S)
        return probe.connect_ex((host, port)) != 0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_to_exit(flags):
    command = [SERVER_BINARY, "--device", "cpu", "--host", "127.0.0.1", "--grpc-port", "0",
               "--http-port", "0", "--metrics-port", "0", *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=REFUSAL_TIMEOUT_S)


def infer_mlp(client, repository):
    arrays = gp.random_inputs(gp.DEMO_INPUTS["mlp"], 2, seed=5)
    x = grpcclient.InferInput("x", list(arrays["x"].shape), "FP32")
    x.set_data_from_numpy(arrays["x"])
    result = client.infer("mlp", [x], client_timeout=CALL_TIMEOUT_S)
    want = gp.ReferenceModel(repository, "mlp").run(arrays)["y"]
    return gp.relative_error(result.as_numpy("y"), want)


class TritonCommandLineTest(unittest.TestCase):

    def test_a_triton_command_line_starts_unchanged(self):
        log_file = os.path.join(gp.scratch_dir("log_"), "server.log")
        ignored = {
            "--backend-directory": "/opt/tritonserver/backends",
            "--backend-config": "onnxruntime,default-max-batch-size=8",
            "--pinned-memory-pool-byte-size": "268435456",
            "--cuda-memory-pool-byte-size": "0:67108864",
            "--grpc-infer-allocation-pool-size": "16",
            "--model-load-thread-count": "2",
            "--allow-sagemaker": "false",
        }
        flags = [f"{flag}={value}" for flag, value in ignored.items()]
        flags += ["--strict-model-config=false", "--log-verbose=1", "--log-format", "ISO8601",
                  f"--log-file={log_file}", "--exit-on-error=true", "--model-control-mode",
                  "explicit", "--load-model=mlp", "--load-model", "dlrm_dense",
                  "--http-thread-count", "4", "--grpc-keepalive-time=7200000",
                  "--allow-cpu-metrics=false", "--metrics-interval-ms=500"]
        with gp.ServerProcess(SERVER_BINARY, _repository, flags) as server:
            self.assertEqual(server.serving_state, "SERVING", server.output())
            client = grpcclient.InferenceServerClient(url=server.url)
            # Both --load-model flags count, not only the last.
            for model in ("mlp", "dlrm_dense"):
                self.assertTrue(client.is_model_ready(model, client_timeout=CALL_TIMEOUT_S),
                                f"SERVER: --load-model {model} is loaded")
            self.assertLess(infer_mlp(client, _repository), gp.RELATIVE_TOLERANCE)
            client.close()
            status, body = http_get("127.0.0.1", server.metrics_port, "/metrics")
            self.assertEqual(status, 200)
            self.assertNotIn("nv_cpu_", body, "SERVER: --allow-cpu-metrics=false drops them")
            self.assertIn("nv_pinned_memory_pool_total_bytes", body)
        with open(log_file) as log:
            lines = log.read().splitlines()
        self.assertTrue(lines, "SERVER: --log-file holds the log")
        for line in lines:
            self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [DIWEC] ",
                             "SERVER: --log-format ISO8601")
        for flag in ignored:
            said = [line for line in lines if f"{flag} does not apply to graphserve (" in line]
            self.assertEqual(len(said), 1, f"SERVER: one line for {flag}:\n" + "\n".join(lines))
            self.assertTrue(said[0].endswith("; ignored"), said[0])

    def test_each_listener_binds_the_address_its_flag_gives(self):
        # Loopback holds all of 127.0.0.0/8: a listener bound to one of those
        # addresses answers there and not on 127.0.0.1.
        grpc_port = free_port()
        flags = ["--grpc-address", "127.0.0.4", "--grpc-port", str(grpc_port),
                 "--http-address", "127.0.0.2", "--metrics-address", "127.0.0.3"]
        server = gp.ServerProcess(SERVER_BINARY, _repository, flags)
        # The serving line names gRPC's own address.
        with server:
            self.assertIn(f"serving gRPC on 127.0.0.4:{grpc_port}", server.output())
            self.assertIn(f"serving HTTP/REST on 127.0.0.2:{server.http_port}", server.output())
            self.assertIn(f"serving metrics on 127.0.0.3:{server.metrics_port}", server.output())
            status, _ = http_get("127.0.0.2", server.http_port, "/v2/health/ready")
            self.assertEqual(status, 200, "SERVER: HTTP/REST on --http-address")
            self.assertTrue(refuses_connections("127.0.0.1", server.http_port),
                            "SERVER: HTTP/REST listens on --http-address only")
            status, body = http_get("127.0.0.3", server.metrics_port, "/metrics")
            self.assertEqual(status, 200, "SERVER: metrics on --metrics-address")
            self.assertIn("nv_inference_request_success", body)
            self.assertIn("nv_cpu_utilization", body, "SERVER: CPU metrics are on by default")
            self.assertTrue(refuses_connections("127.0.0.1", server.metrics_port),
                            "SERVER: metrics listen on --metrics-address only")
            client = grpcclient.InferenceServerClient(url=f"127.0.0.4:{grpc_port}")
            self.assertTrue(client.is_server_live(client_timeout=CALL_TIMEOUT_S),
                            "SERVER: gRPC on --grpc-address")
            client.close()
            self.assertTrue(refuses_connections("127.0.0.1", grpc_port),
                            "SERVER: gRPC listens on --grpc-address only")

    def test_an_address_of_another_machine_names_its_flag(self):
        # TEST-NET-1 (RFC 5737): never an address of this machine.
        done = run_to_exit(["--model-repository", _repository, "--http-address", "192.0.2.1"])
        self.assertEqual(done.returncode, 1, done.stderr)
        self.assertIn("--http-address 192.0.2.1 is not an address of this machine", done.stderr)

    def test_several_repositories_serve_together_and_a_duplicate_is_refused(self):
        scratch = gp.scratch_dir("repos_")
        first, second = os.path.join(scratch, "first"), os.path.join(scratch, "second")
        shutil.copytree(_repository, first)
        os.makedirs(second)
        shutil.move(os.path.join(first, "dlrm_dense"), second)
        with gp.ServerProcess(SERVER_BINARY, first, ["--model-repository", second]) as server:
            self.assertEqual(server.serving_state, "SERVING", server.output())
            client = grpcclient.InferenceServerClient(url=server.url)
            index = {m["name"] for m in client.get_model_repository_index(as_json=True)["models"]}
            self.assertEqual(index, {"mlp", "dlrm_dense"}, "SERVER: both repositories' models")
            for model in ("mlp", "dlrm_dense"):
                self.assertTrue(client.is_model_ready(model, client_timeout=CALL_TIMEOUT_S))
            client.close()
        shutil.copytree(os.path.join(second, "dlrm_dense"), os.path.join(first, "dlrm_dense"))
        done = run_to_exit(["--model-repository", first, "--model-repository", second])
        self.assertEqual(done.returncode, 1, f"{done.stdout}\n{done.stderr}")
        self.assertIn(f"in two model repositories: {first}/dlrm_dense and {second}/dlrm_dense",
                      done.stdout, "SERVER: the duplicate is named with both paths")

    def test_allow_grpc_false_serves_http_alone(self):
        grpc_port = free_port()
        command = [SERVER_BINARY, "--model-repository", _repository, "--device", "cpu",
                   "--host", "127.0.0.1", "--grpc-port", str(grpc_port), "--http-port", "0",
                   "--metrics-port", "0", "--allow-grpc=false"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
        lines = []
        http_port = None
        try:
            deadline = time.monotonic() + gp.STARTUP_TIMEOUT_S
            ready = threading.Event()

            def read():
                for line in process.stdout:
                    lines.append(line.rstrip("\n"))
                    if "serving without gRPC (--allow-grpc=false)" in line:
                        ready.set()

            threading.Thread(target=read, daemon=True).start()
            self.assertTrue(ready.wait(max(0, deadline - time.monotonic())),
                            "SERVER: no 'serving without gRPC' line:\n" + "\n".join(lines))
            match = re.search(r"serving HTTP/REST on 127\.0\.0\.1:(\d+)", "\n".join(lines))
            self.assertIsNotNone(match, "\n".join(lines))
            http_port = int(match.group(1))
            status, _ = http_get("127.0.0.1", http_port, "/v2/health/ready")
            self.assertEqual(status, 200, "SERVER: HTTP/REST serves")
            self.assertTrue(refuses_connections("127.0.0.1", grpc_port),
                            "SERVER: no gRPC listener with --allow-grpc=false")
        finally:
            process.terminate()
            code = process.wait(timeout=gp.EXIT_TIMEOUT_S)
        self.assertEqual(code, 0, "SERVER: drains and exits 0 without gRPC:\n" + "\n".join(lines))

    def test_an_unknown_flag_names_the_closest_one(self):
        done = run_to_exit(["--model-repositroy", _repository])
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("unknown flag --model-repositroy (did you mean --model-repository?)",
                      done.stderr)


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
