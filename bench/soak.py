"""Soak: graphserve saturated for minutes with mixed clients, checked all along.

Serves the demo repository (mlp, dlrm_dense) and, for `--minutes`, keeps it
busy from several client threads at once: gRPC unary, HTTP, the gRPC stream
and system shared memory, at mixed batch sizes. About 5% of the requests are
malformed (a wrong shape, datatype or input name) and must be refused with
INVALID_ARGUMENT (HTTP 400) while the others are answered right. Every minute
one model is reloaded (RepositoryModelLoad of a loaded model: the new version
is captured while the old one serves).

Every answer is compared with onnxruntime's (CPU) on the same input. The
report (JSON, also printed) counts answers, wrong answers, refusals and
unexpected errors (each kind with one example), samples the server's RSS and
GPU memory every 10 s and fits their slope (MiB per minute), and gives the
p99 latency of each minute.

    python3 bench/soak.py --server BIN --make-repository BIN --minutes 9 \\
        --device cuda:0 --out DIR

OUT/soak.json is rewritten at every sample (finished: false until the end),
so a run cut short keeps what it saw. On the GPU machine a call's processes
end with the call unless started in a session of their own (setsid), which
then runs on while the machine is held: a soak longer than one call starts
that way and a second call collects it.
"""

import argparse
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time

import numpy as np
import onnxruntime
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import graphserve_process as gp  # noqa: E402

MODELS = ("mlp", "dlrm_dense")
BATCH_SIZES = (1, 2, 3, 4, 7, 16, 33, 64)
MALFORMED_SHARE = 0.05
# float32 on the GPU (TF32 off) against onnxruntime's CPU kernels.
TOLERANCE = 1e-4


class Reference:
    """A demo model and its answers by onnxruntime on the model file."""

    def __init__(self, repository, name):
        self.name = name
        self.session = onnxruntime.InferenceSession(
            os.path.join(repository, name, "1", "model.onnx"),
            providers=["CPUExecutionProvider"])
        self.outputs = [o.name for o in self.session.get_outputs()]

    def case(self, rows, seed):
        """Random inputs of `rows` rows and onnxruntime's outputs for them."""
        feeds = gp.random_inputs(gp.DEMO_INPUTS[self.name], rows, seed)
        return feeds, dict(zip(self.outputs, self.session.run(self.outputs, feeds)))


class Tally:
    """Counts shared by the client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.examples = {}
        self.latencies = {}  # minute -> [seconds]

    def add(self, kind, example=None, latency=None, minute=None):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if example is not None and kind not in self.examples:
                self.examples[kind] = str(example)[:300]
            if latency is not None:
                self.latencies.setdefault(minute, []).append(latency)


class Soak:
    def __init__(self, args, server, references):
        self.args = args
        self.server = server
        self.references = references
        self.tally = Tally()
        self.start = time.monotonic()
        self.deadline = self.start + 60 * args.minutes
        self.stop = threading.Event()

    def minute(self):
        return int((time.monotonic() - self.start) // 60)

    def pick(self, rng):
        reference = rng.choice(self.references)
        feeds, want = reference.case(rng.choice(BATCH_SIZES), rng.getrandbits(32))
        return reference, feeds, want

    def check(self, protocol, want, got, started):
        """Records one answered request: right or wrong."""
        for name, expected in want.items():
            error = gp.relative_error(got[name], expected)
            if not error <= TOLERANCE:
                self.tally.add(f"{protocol}: wrong answer", f"{name}: relative error {error}")
                return
        self.tally.add(f"{protocol}: right", latency=time.monotonic() - started,
                       minute=self.minute())

    def refused(self, protocol, malformed, error):
        """Records a request the server refused: expected only if malformed,
        and then as INVALID_ARGUMENT (HTTP 400)."""
        if malformed and error.status() in ("StatusCode.INVALID_ARGUMENT", "400"):
            self.tally.add(f"{protocol}: malformed refused")
        else:
            self.tally.add(f"{protocol}: unexpected error", f"{error.status()}: {error}")

    @staticmethod
    def malform(feeds, rng):
        """A copy of `feeds` broken one way: shape, datatype or name."""
        name = next(iter(feeds))
        broken = dict(feeds)
        how = rng.randrange(3)
        if how == 0:
            broken[name] = feeds[name][:, :-1] if feeds[name].shape[1] > 1 else \
                np.concatenate([feeds[name]] * 2, axis=1)
        elif how == 1:
            broken[name] = feeds[name].astype(np.float64)
        else:
            broken["no_such_input"] = broken.pop(name)
        return broken

    def run_unary(self, seed, protocol):
        """One request at a time over gRPC or HTTP (JSON or binary at random),
        some of them malformed."""
        rng = random.Random(seed)
        grpc = protocol == "grpc"
        module = grpcclient if grpc else httpclient
        client = (grpcclient.InferenceServerClient(self.server.url) if grpc else
                  httpclient.InferenceServerClient(f"127.0.0.1:{self.server.http_port}",
                                                   network_timeout=60))
        while time.monotonic() < self.deadline:
            reference, feeds, want = self.pick(rng)
            malformed = rng.random() < MALFORMED_SHARE
            sent = self.malform(feeds, rng) if malformed else feeds
            binary = {} if grpc else {"binary_data": rng.random() < 0.5}
            inputs = []
            for name, array in sent.items():
                tensor = module.InferInput(name, list(array.shape),
                                           "FP64" if array.dtype == np.float64 else "FP32")
                tensor.set_data_from_numpy(array, **binary)
                inputs.append(tensor)
            outputs = [module.InferRequestedOutput(n, **binary) for n in want]
            started = time.monotonic()
            try:
                result = client.infer(reference.name, inputs, outputs=outputs,
                                      **({"client_timeout": 60} if grpc else {}))
            except InferenceServerException as error:
                self.refused(protocol, malformed, error)
                continue
            if malformed:
                self.tally.add(f"{protocol}: malformed answered", reference.name)
                continue
            self.check(protocol, want, {n: result.as_numpy(n) for n in want}, started)
        client.close()

    def run_stream(self, seed):
        rng = random.Random(seed)
        client = grpcclient.InferenceServerClient(self.server.url)
        # One request in flight at a time: the next answer is its answer.
        answers = queue.Queue()
        client.start_stream(callback=lambda result, error: answers.put((result, error)),
                            stream_timeout=None)
        while time.monotonic() < self.deadline:
            reference, feeds, want = self.pick(rng)
            inputs = []
            for name, array in feeds.items():
                tensor = grpcclient.InferInput(name, list(array.shape), "FP32")
                tensor.set_data_from_numpy(array)
                inputs.append(tensor)
            started = time.monotonic()
            client.async_stream_infer(reference.name, inputs)
            try:
                result, error = answers.get(timeout=60)
            except queue.Empty:
                self.tally.add("stream: no answer in 60 s", reference.name)
                break
            if error is not None:
                self.tally.add("stream: unexpected error", error)
                continue
            self.check("stream", want, {n: result.as_numpy(n) for n in want}, started)
        client.stop_stream()
        client.close()

    def run_shared_memory(self, seed):
        rng = random.Random(seed)
        client = grpcclient.InferenceServerClient(self.server.url)
        name = f"soak_{seed}"
        key = f"/graphserve_soak_{seed}_{os.getpid()}"
        size = 4 << 20
        handle = shm.create_shared_memory_region(name, key, size)
        try:
            client.register_system_shared_memory(name, key, size)
            while time.monotonic() < self.deadline:
                reference, feeds, want = self.pick(rng)
                offset = 0
                inputs = []
                for input_name, array in feeds.items():
                    shm.set_shared_memory_region(handle, [array], offset=offset)
                    tensor = grpcclient.InferInput(input_name, list(array.shape), "FP32")
                    tensor.set_shared_memory(name, array.nbytes, offset=offset)
                    inputs.append(tensor)
                    offset += array.nbytes
                outputs = []
                places = {}
                for output_name, expected in want.items():
                    output = grpcclient.InferRequestedOutput(output_name)
                    output.set_shared_memory(name, expected.nbytes, offset=offset)
                    outputs.append(output)
                    places[output_name] = (offset, expected.shape)
                    offset += expected.nbytes
                started = time.monotonic()
                try:
                    client.infer(reference.name, inputs, outputs=outputs, client_timeout=60)
                except InferenceServerException as error:
                    self.refused("shared memory", False, error)
                    continue
                got = {n: shm.get_contents_as_numpy(handle, np.float32, list(shape), offset=at)
                       for n, (at, shape) in places.items()}
                self.check("shared memory", want, got, started)
        finally:
            try:
                client.unregister_system_shared_memory(name)
            finally:
                shm.destroy_shared_memory_region(handle)
                client.close()

    def run_reloads(self):
        client = grpcclient.InferenceServerClient(self.server.url)
        count = 0
        while not self.stop.wait(timeout=60):
            if time.monotonic() > self.deadline - 30:
                break
            model = MODELS[count % len(MODELS)]
            started = time.monotonic()
            try:
                client.load_model(model)
                self.tally.add("reloads", model, latency=time.monotonic() - started,
                               minute="reload")
            except InferenceServerException as error:
                self.tally.add("reload: unexpected error", error)
            count += 1
        client.close()


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def nvidia_smi(query):
    """nvidia-smi's CSV rows for `query` (e.g. "--query-gpu=memory.used"), or []."""
    try:
        done = subprocess.run(["nvidia-smi", query, "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
        return [[field.strip() for field in line.split(",")]
                for line in done.stdout.strip().splitlines()]
    except (OSError, subprocess.TimeoutExpired):
        return []


def gpu_mib(pid):
    """The GPU memory `pid` holds, so that two soaks side by side on one GPU
    tell their servers apart; where the driver does not list the pid (a
    container's own pid namespace), all of GPU 0's used memory."""
    try:
        for app_pid, used in nvidia_smi("--query-compute-apps=pid,used_memory"):
            if int(app_pid) == pid:
                return float(used)
        return float(nvidia_smi("--query-gpu=memory.used")[0][0])
    except (ValueError, IndexError):
        return None


def slope_per_minute(samples):
    """Least-squares slope of (seconds, value) samples, per minute; None if
    fewer than 3 samples."""
    points = [(t, v) for t, v in samples if v is not None]
    if len(points) < 3:
        return None
    t = np.array([p[0] for p in points]) / 60.0
    v = np.array([p[1] for p in points])
    return float(np.polyfit(t, v, 1)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--threads", type=int, default=2, help="threads per client kind")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    repository = gp.make_demo_repository(args.make_repository)
    server = gp.ServerProcess(args.server, repository,
                              ["--model-control-mode", "explicit",
                               "--load-model", MODELS[0], "--load-model", MODELS[1]])
    server.command[server.command.index("--device") + 1] = args.device
    report = {"minutes": args.minutes, "device": args.device, "threads_per_kind": args.threads,
              "batch_sizes": BATCH_SIZES, "malformed_share": MALFORMED_SHARE}
    with server:
        references = [Reference(repository, name) for name in MODELS]
        soak = Soak(args, server, references)
        workers = []
        kinds = [(soak.run_unary, ("grpc",)), (soak.run_unary, ("http",)),
                 (soak.run_stream, ()), (soak.run_shared_memory, ())]
        for kind, extra in kinds:
            for _ in range(args.threads):
                workers.append(threading.Thread(target=kind, args=(len(workers) + 1, *extra),
                                                daemon=True))
        reloader = threading.Thread(target=soak.run_reloads, daemon=True)
        for thread in workers + [reloader]:
            thread.start()
        samples = []  # (seconds, rss MiB, gpu MiB)
        while any(t.is_alive() for t in workers):
            samples.append((time.monotonic() - soak.start, rss_mib(server.process.pid),
                            gpu_mib(server.process.pid)))
            print(f"soak: {samples[-1][0]:.0f} s, RSS {samples[-1][1]:.0f} MiB, GPU "
                  f"{samples[-1][2]} MiB, {json.dumps(soak.tally.counts)}", flush=True)
            # A run cut short (a killed process) keeps the report so far.
            save(args.out, report, soak.tally, samples, alive=True, finished=False)
            for t in workers:
                t.join(timeout=10 / len(workers))
        soak.stop.set()
        reloader.join(timeout=120)
        alive = server.process.poll() is None
    final = save(args.out, report, soak.tally, samples, alive=alive, finished=True)
    print(json.dumps({k: v for k, v in final.items() if k != "samples"}, indent=1))
    ok = alive and final["wrong_answers"] == 0 and final["unexpected_errors"] == 0
    sys.exit(0 if ok else 1)


def save(out, base, tally, samples, alive, finished):
    """Writes OUT/soak.json from the counts and samples so far; returns it."""
    with tally.lock:
        counts = dict(tally.counts)
        examples = dict(tally.examples)
        latencies = {m: list(v) for m, v in tally.latencies.items()}
    # The first minute warms up (allocations, first captures): slopes from
    # the second on.
    steady = [s for s in samples if s[0] >= 60] or samples
    report = dict(base)
    report.update(
        finished=finished, counts=counts, examples=examples, server_alive=alive,
        wrong_answers=sum(v for k, v in counts.items() if "wrong" in k or "answered" in k),
        unexpected_errors=sum(v for k, v in counts.items() if "unexpected" in k
                              or "no answer" in k),
        rss_mib_first_last=[samples[0][1], samples[-1][1]] if samples else None,
        rss_slope_mib_per_minute=slope_per_minute([(s[0], s[1]) for s in steady]),
        gpu_mib_first_last=[samples[0][2], samples[-1][2]] if samples else None,
        gpu_slope_mib_per_minute=slope_per_minute([(s[0], s[2]) for s in steady]),
        p99_ms_per_minute={str(m): round(1000 * float(np.percentile(v, 99)), 2)
                           for m, v in sorted(latencies.items(), key=lambda kv: str(kv[0]))
                           if m != "reload"},
        reload_seconds=[round(v, 2) for v in latencies.get("reload", [])],
        samples=[[round(a, 1), round(b, 1), c] for a, b, c in samples])
    with open(os.path.join(out, "soak.json"), "w") as f:
        json.dump(report, f, indent=1)
    return report


if __name__ == "__main__":
    main()
