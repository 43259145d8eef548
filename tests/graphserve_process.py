"""The real graphserve binary in a child process, for the Python compatibility
tests (tests/*_compat_test.py and friends), and what they share: the demo
repository and onnxruntime's reference outputs.

The tests get the runfiles paths of the two binaries on their command line
(tests/BUILD passes them) and use $TEST_TMPDIR for everything they write.
Every wait here has a deadline, so a hung server fails the test with the
server's own output instead of hanging CI.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

# Printed by graphserve once HTTP/REST listens, before the gRPC line.
_HTTP_LINE = re.compile(r"graphserve: serving HTTP/REST on [^\s:]+:(?P<port>\d+)")
_METRICS_LINE = re.compile(r"graphserve: serving metrics on [^\s:]+:(?P<port>\d+)")
# Printed by graphserve once it listens (server/inference_server.cc).
_SERVING_LINE = re.compile(
    r"graphserve: serving gRPC on (?P<host>[^\s:]+):(?P<port>\d+) \((?P<state>[^)]*)\)")

# Loading the two demo models on the host executor takes about a second; the
# margin covers a loaded CI machine with other tests on both cores.
STARTUP_TIMEOUT_S = 60
# How long a SIGTERM'ed server may take to drain and exit: its
# --exit-timeout-secs below plus time to stop gRPC.
EXIT_TIMEOUT_FLAG_S = 30
EXIT_TIMEOUT_S = EXIT_TIMEOUT_FLAG_S + 15


def parse_paths(argv):
    """argv[1:] is `--server PATH --make-repository PATH [unittest args]`."""
    paths = {}
    rest = [argv[0]]
    args = iter(argv[1:])
    for arg in args:
        if arg in ("--server", "--make-repository"):
            paths[arg] = os.path.abspath(next(args))
        else:
            rest.append(arg)
    for flag in ("--server", "--make-repository"):
        if flag not in paths:
            sys.exit(f"{argv[0]}: {flag} PATH is required (tests/BUILD passes it)")
    return paths["--server"], paths["--make-repository"], rest


def scratch_dir(prefix):
    """A fresh directory under $TEST_TMPDIR (or the system's temp dir)."""
    return tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("TEST_TMPDIR"))


def make_demo_repository(tool):
    """Writes the demo repository (mlp, dlrm_dense) into a fresh directory."""
    out = os.path.join(scratch_dir("repo_"), "models")
    done = subprocess.run([tool, "--out", out], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"make_demo_repository failed ({done.returncode}):\n"
                           f"{done.stdout}{done.stderr}")
    return out


class ServerProcess:
    """graphserve on 127.0.0.1, a port of its own choosing, the host executor.

    Use as a context manager: the server is started on entry and always
    stopped (SIGTERM, then SIGKILL past the deadline) on exit.
    """

    def __init__(self, binary, repository, extra_flags=(), cwd=None):
        self.cwd = cwd  # where relative paths in extra_flags lead
        self.command = [
            binary,
            "--model-repository", repository,
            "--grpc-port", "0",
            "--http-port", "0",
            "--metrics-port", "0",
            "--host", "127.0.0.1",
            "--device", "cpu",
            "--exit-timeout-secs", str(EXIT_TIMEOUT_FLAG_S),
            *extra_flags,
        ]
        self.process = None
        self.port = None
        self.http_port = None
        self.metrics_port = None
        self.serving_state = None
        self._lines = []  # stdout and stderr, interleaved as they arrive
        self._lines_lock = threading.Lock()
        self._serving = threading.Event()
        self._readers = []

    @property
    def url(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, errors="backslashreplace", bufsize=1,
                                        cwd=self.cwd)
        # Readers drain both pipes for the server's whole life, so that a
        # chatty server never blocks on a full pipe.
        for stream, tag in ((self.process.stdout, ""), (self.process.stderr, "[stderr] ")):
            reader = threading.Thread(target=self._read, args=(stream, tag), daemon=True)
            reader.start()
            self._readers.append(reader)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._serving.wait(timeout=0.1):
            if self.process.poll() is not None:
                self._join_readers()
                raise RuntimeError(f"graphserve exited with {self.process.returncode} before "
                                   f"serving:\n{self.output()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"graphserve did not print its serving line within "
                                   f"{STARTUP_TIMEOUT_S} s:\n{self.output()}")
        return self

    def _read(self, stream, tag):
        for line in stream:
            with self._lines_lock:
                self._lines.append(tag + line.rstrip("\n"))
            http = _HTTP_LINE.search(line)
            if http and self.http_port is None:
                self.http_port = int(http.group("port"))
            metrics = _METRICS_LINE.search(line)
            if metrics and self.metrics_port is None:
                self.metrics_port = int(metrics.group("port"))
            match = _SERVING_LINE.search(line)
            if match and not self._serving.is_set():
                self.port = int(match.group("port"))
                self.serving_state = match.group("state")
                self._serving.set()

    def _join_readers(self):
        for reader in self._readers:
            reader.join(timeout=5)
        if not any(reader.is_alive() for reader in self._readers):
            self.process.stdout.close()
            self.process.stderr.close()

    def output(self):
        """Everything the server printed so far."""
        with self._lines_lock:
            return "\n".join(self._lines)

    def terminate(self):
        """Sends SIGTERM (the drain) without waiting."""
        self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout=EXIT_TIMEOUT_S):
        """The exit code, or None when the server is still running at `timeout`."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._join_readers()
        return code

    def stop(self):
        """SIGTERM and wait; SIGKILL when it does not exit in time. The exit code."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.terminate()
        code = self.wait()
        if code is None:
            self.process.kill()
            code = self.process.wait(timeout=10)
            sys.stderr.write(f"graphserve ignored SIGTERM for {EXIT_TIMEOUT_S} s; killed\n")
        return code

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is not None:
            sys.stderr.write(f"--- graphserve output ---\n{self.output()}\n--- end ---\n")
        return False


def start_demo_server(server_binary, make_repository_tool, extra_flags=()):
    """The module set-up of a test that shares one server: the demo repository
    and graphserve serving it (HTTP/REST included), with `extra_flags` after
    the usual ones. (server, repository)."""
    repository = make_demo_repository(make_repository_tool)
    server = ServerProcess(server_binary, repository, extra_flags).start()
    assert server.http_port, f"SERVER: no 'serving HTTP/REST on' line:\n{server.output()}"
    return server, repository


def stop_checked(server):
    """The module teardown of a test that shares one server: stop it, print
    its output (Bazel shows it for a failing test), and fail unless it exited
    0 after SIGTERM."""
    if server is None:
        return
    code = server.stop()
    sys.stderr.write(f"--- graphserve output ---\n{server.output()}\n--- end ---\n")
    if code != 0:
        raise AssertionError(f"SERVER: graphserve exited with {code} after SIGTERM, expected 0")


class ReferenceModel:
    """onnxruntime on the repository's own model.onnx: the independent
    reference every output is compared with."""

    def __init__(self, repository, model):
        import onnxruntime  # only the tests that compare outputs need it

        path = os.path.join(repository, model, "1", "model.onnx")
        self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])

    def run(self, inputs):
        names = [output.name for output in self.session.get_outputs()]
        return dict(zip(names, self.session.run(names, inputs)))


# ||got - want|| / ||want|| allowed between the server's host executor and
# onnxruntime: float32 sums in a different order.
RELATIVE_TOLERANCE = 1e-5


def relative_error(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def random_inputs(specs, batch, seed):
    """{name: float32 array [batch, *dims]} with values in [-1, 1)."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-1, 1, size=(batch, *dims)).astype(np.float32)
            for name, dims in specs.items()}


# The demo models' interfaces as their configs declare them, without the
# batch dimension (examples/demo_repository.h). The tests check the server's
# metadata against these rather than taking them from the server.
DEMO_INPUTS = {
    "mlp": {"x": (512,)},
    "dlrm_dense": {"dense": (13,), "sparse_emb": (26, 16)},
}
DEMO_OUTPUTS = {
    "mlp": {"y": (1,)},
    "dlrm_dense": {"prob": (1,)},
}
DEMO_MAX_BATCH = 256
