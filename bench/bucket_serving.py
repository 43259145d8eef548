"""Shape buckets on the GPU: models with a dynamic sequence (or image size) served over a length mix.

Issue 29's evidence, one run on one machine (gpu_check.sh BUNDLE buckets):
  * Hugging Face BERT-base (random weights, exported by torch.onnx with the
    sequence dynamic) loaded by core_bench (ServedModel in-process: the
    server's queue, dynamic batching, stream slots and graph replays, no RPC)
    and driven at saturation over a log-normal length mix (most requests 10-60
    tokens, a tail to 512), three ways: a grid of buckets, every request padded
    to 512, and one bucket per length (exact, no padding);
  * its answers at the grid against PyTorch in float64 at each request's exact
    length (the real positions only, as the server returns them);
  * PyTorch eager in float32 on the same mix: one request at a time at its own
    length, and batches of 32 padded to their longest;
  * GPT-2 (causal, ids only) at the grid, answers against float64;
  * ResNet-50 exported with a dynamic height and width, at three image sizes
    (the load-time check finds its padding changes the answer: exact sizes);
  * the load of an 8 x 8 grid (8 batch sizes x 8 lengths), and BERT at 4
    streams;
  * part prepared: the repositories `graphserve-capture prepare` writes from
    its flags alone: BERT at the grid (--buckets, --pad), served and checked
    against float64 beside the hand-written grid config; GPT-2 served
    without a batch dim (--max-batch-size 0: each request alone, its dim 0
    and its sequence both bucketed), checked the same way;
  * part eager: capture.eager_extents, what no bucket takes run at its own
    extents: ResNet-50 asked for 288 x 288 between its exact sizes, BERT's
    tail past its largest bucket, checked against float64;
  * part history: BERT prepared with its buckets chosen by the planner from the
    mix's length history for fixed sizes (prepare --history --max-graphs):
    the sizes at 16 buckets on 2 streams (the fine grid's budget), and
    per_length's sizes at 32 buckets on 1 stream (half per_length's graphs),
    served and checked against float64;
  * part reselect: a graphserve process serving BERT at the 5-bucket grid over
    HTTP, driven by client threads (1-4 rows, the length mix), re-chosen
    live by `graphserve-capture select --from-metrics --max-graphs 30
    --reload` (its live rows and length histograms) while the traffic goes
    on: the grids before and after, failures (none expected: no downtime),
    and answers on both sides against float64 (part reselect_demand: the same
    with select's --plan-rows chunk-demand, sizes from what chunks could merge);
  * part shm: BERT served by graphserve, asked by graphserve-client at
    lengths between buckets with its tensors in the request, in system
    shared memory and in CUDA shared memory (placed and padded by the
    device), alone and all at once, each against float64;
  * part fine_grid: BERT at the 15 buckets with the fewest padded positions for
    the mix (best_grid) and 512, every size at each, beside the 5-bucket grid and one
    bucket per length;
  * the batch planner with each bucket's own launch costs against the same
    plans made from the largest bucket's costs (what it did before it took
    graph keys), both given in the config, in the order own, largest,
    largest, own (part planner_costs).
Writes bucket_serving.md and bucket_serving.json under --out.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import model_zoo  # noqa: E402  (export, wrappers)

GRID = [32, 64, 128, 256, 512]
SIZES = [1, 2, 4, 8, 16, 32]
PER_LENGTH_SIZES = [1, 4, 16]
GRID_8X8 = ([16, 32, 48, 64, 96, 128, 256, 512], [1, 2, 4, 8, 12, 16, 24, 32])
IMAGE_SIZES = [224, 256, 320]


def log(*parts):
    print(*parts, flush=True)


def mix_lengths(mix, count, seed):
    """numpy's draw of the core_bench mix: the same distribution, not the same requests."""
    _, spec = mix.split(":")
    median, sigma, longest, multiple = (float(v) for v in spec.split(","))
    rng = np.random.default_rng(seed)
    lengths = np.ceil(median * np.exp(sigma * rng.standard_normal(count)))
    lengths = np.clip(lengths, 1, longest)
    lengths = np.ceil(lengths / multiple) * multiple
    return np.minimum(lengths, longest).astype(np.int64)


def best_grid(lengths, count):
    """The `count` buckets with the fewest padded positions for `lengths`
    (each bucket ends at one of them; core_bench's BestGrid, in Python)."""
    values, counts = np.unique(lengths, return_counts=True)
    below = np.concatenate([[0], np.cumsum(counts)])  # lengths <= values[i-1]
    m = len(values)
    inf = float("inf")
    cost = [[inf] * m for _ in range(count + 1)]
    back = [[-1] * m for _ in range(count + 1)]
    for i in range(m):
        cost[1][i] = values[i] * below[i + 1]
    for k in range(2, count + 1):
        for i in range(m):
            for j in range(i):
                c = cost[k - 1][j] + values[i] * (below[i + 1] - below[j + 1])
                if c < cost[k][i]:
                    cost[k][i], back[k][i] = c, j
    k = min(count, m)
    grid, i = [], m - 1
    while k >= 1 and i >= 0:
        grid.append(int(values[i]))
        i, k = back[k][i], k - 1
    return sorted(grid)


def config_text(name, inputs, outputs, buckets, sizes, streams, shape_dims, padding=None,
                batching=True, eager_extents=None):
    def tensors(items):
        return ", ".join(f'{{ name: "{n}" data_type: {t} dims: [ {", ".join(map(str, d))} ] }}'
                         for n, t, d in items)
    bucket_text = " ".join(f"buckets {{ extents: [ {', '.join(map(str, b))} ] }}" for b in buckets)
    dims_text = " ".join(f'shape_dims: "{d}"' for d in shape_dims)
    lines = [f'name: "{name}"', 'platform: "onnxruntime_onnx"',
             f"max_batch_size: {max(sizes) if batching else 0}",
             f"input [ {tensors(inputs)} ]", f"output [ {tensors(outputs)} ]"]
    if batching:
        lines.append("dynamic_batching { max_queue_delay_microseconds: 200 }")
    lines.append(f"capture {{ batch_sizes: [ {', '.join(map(str, sizes))} ] streams: {streams} "
                 f"{dims_text} {bucket_text}"
                 + (f' shape_padding: "{padding}"' if padding else "")
                 + (f" eager_extents: [ {', '.join(map(str, eager_extents))} ]"
                    if eager_extents else "") + " }")
    return "\n".join(lines) + "\n"


def write_repo(root, name, onnx_path, config):
    model_dir = os.path.join(root, name)
    os.makedirs(os.path.join(model_dir, "1"), exist_ok=True)
    target = os.path.join(model_dir, "1", "model.onnx")
    if not os.path.exists(target):
        os.symlink(os.path.abspath(onnx_path), target)
    with open(os.path.join(model_dir, "config.pbtxt"), "w") as f:
        f.write(config)
    return root


SUMMARY = re.compile(r"core_bench \S+ graphs \S+, .*?: ([\d.]+) infer/s, ([\d.]+) executions/s "
                     r"\(([\d.]+) rows per execution\), latency p50 ([\d.]+) us p99 ([\d.]+) us, "
                     r"(\d+) failed")
LOADED = re.compile(r"loaded in ([\d.]+) ms: (\d+) buckets x (\d+) batch sizes on (\d+) streams, "
                    r"weights ([\d.]+) MiB, slots ([\d.]+) MiB")
LENGTHS = re.compile(r"lengths \S+: ([\d.]+) tokens/s; padded positions: buckets \[([\d,]*)\] "
                     r"([\d.]+)% \(pad to (\d+): ([\d.]+)%; best (\d+) buckets \[([\d,]*)\]: "
                     r"([\d.]+)%\)")


def core_bench(args, repo, name, lengths, milliseconds, dump=None, dump_count=16, timeout=600,
               write_config=None):
    cmd = [os.path.join(args.bin, "core_bench"), "--model-repository", repo, "--model", name,
           "--outstanding", "64", "--threads", "4", "--milliseconds", str(milliseconds),
           "--lengths", lengths]
    if write_config:
        cmd += ["--write-config", write_config]
    if dump:
        os.makedirs(dump, exist_ok=True)
        cmd += ["--dump", dump, "--dump-count", str(dump_count)]
    log("$", " ".join(cmd))
    start = time.time()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text = done.stdout + done.stderr
        code = done.returncode
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() + (e.stderr or b"").decode() if isinstance(
            e.stdout, bytes) else str(e.stdout or "") + str(e.stderr or "")
        code = "timeout"
    result = {"exit": code, "wall_s": round(time.time() - start, 1)}
    for line in text.splitlines():
        if "padded into it" in line or "bucket exactly" in line or "error" in line.lower():
            log("  ", line[-400:])
    if (m := LOADED.search(text)):
        result.update(load_ms=float(m[1]), buckets=int(m[2]), batch_sizes=int(m[3]),
                      streams=int(m[4]), weight_mib=float(m[5]), slot_mib=float(m[6]),
                      graphs=int(m[2]) * int(m[3]) * int(m[4]))
    if (m := re.search(r"^load phases: (.*)$", text, re.M)):
        result["load_phases"] = m[1]
    if (m := SUMMARY.search(text)):
        result.update(infer_s=float(m[1]), executions_s=float(m[2]), rows_per_execution=float(m[3]),
                      p50_us=float(m[4]), p99_us=float(m[5]), failed=int(m[6]))
    if (m := LENGTHS.search(text)):
        result.update(tokens_s=float(m[1]), grid=m[2], padded_pct=float(m[3]),
                      pad_max_pct=float(m[5]), best_grid=m[7], best_pct=float(m[8]))
    result["padding"] = ("checked exact" if "padded into it" in text else
                         "exact extents only" if "bucket exactly" in text else "n/a")
    if code != 0:
        result["tail"] = text[-1500:]
    log("  ->", {k: v for k, v in result.items() if k != "tail"})
    return result


COST = re.compile(r"cost \{([^}]*)\}")


def largest_bucket_costs(config):
    """`config` (config.pbtxt text) with each capture cost replaced by its
    batch size's cost at the largest bucket: every bucket planned as the
    largest one is."""
    def field(block, name):
        return [float(v) for v in re.findall(rf"\b{name}: ([\d.e+-]+)", block)]

    largest = {}  # batch size -> (bucket, block) of its largest bucket
    for block in COST.findall(config):
        batch = int(field(block, "batch_size")[0])
        bucket = tuple(field(block, "bucket"))
        if batch not in largest or bucket > largest[batch][0]:
            largest[batch] = (bucket, block)

    def flattened(match):
        block = match[1]
        _, top = largest[int(field(block, "batch_size")[0])]
        for name in ("eager_us", "graph_us"):
            value = field(top, name)
            if value:
                block = re.sub(rf"\b{name}: [\d.e+-]+", f"{name}: {value[0]}", block)
        return "cost {" + block + "}"
    return COST.sub(flattened, config)


def compare_dumps(dump, reference, count):
    """Worst error of the dumped answers against `reference(inputs) -> float64 array`."""
    worst = 0.0
    checked = 0
    for k in range(count):
        files = sorted(glob.glob(os.path.join(dump, f"{k}_*.npy")))
        if not files:
            break
        arrays = {os.path.basename(f)[len(f"{k}_"):-4]: np.load(f) for f in files}
        got = arrays.pop("y")
        want = reference(arrays)
        scale = max(np.abs(want).max(), 1e-30)
        worst = max(worst, float(np.abs(got.astype(np.float64) - want).max() / scale))
        checked += 1
    return {"checked": checked, "max_error": worst}


def text_reference(model, kind):
    model64 = model_zoo.wrap(model, kind).double().cuda().eval()

    def run(arrays):
        ids = torch.from_numpy(arrays["input_ids"]).cuda()
        with torch.no_grad():
            if kind == "text_mask":
                mask = torch.from_numpy(arrays["attention_mask"]).cuda()
                return model64(ids, mask).cpu().numpy()
            return model64(ids).cpu().numpy()
    return run


def eager_baselines(model, lengths):
    """PyTorch eager fp32 on `lengths`: one request at a time, and 32 at a time padded."""
    model32 = model_zoo.wrap(model, "text_mask").float().cuda().eval()
    gen = torch.Generator(device="cpu").manual_seed(0)

    def batch(ls):
        longest = int(max(ls))
        ids = torch.randint(1, 1000, (len(ls), longest), generator=gen).cuda()
        mask = torch.zeros(len(ls), longest, dtype=torch.int64)
        for i, length in enumerate(ls):
            mask[i, :length] = 1
        return ids, mask.cuda()

    results = {}
    with torch.no_grad():
        for _ in range(3):
            model32(*batch([128]))
        torch.cuda.synchronize()
        times = []
        start = time.time()
        for length in lengths[:1000]:
            t0 = time.time()
            model32(*batch([length]))
            torch.cuda.synchronize()
            times.append(time.time() - t0)
        elapsed = time.time() - start
        times = np.array(times) * 1e6
        results["one_at_a_time"] = {
            "requests": len(times), "infer_s": len(times) / elapsed,
            "tokens_s": float(np.sum(lengths[:1000])) / elapsed,
            "p50_us": float(np.percentile(times, 50)), "p99_us": float(np.percentile(times, 99))}
        times = []
        start = time.time()
        chunks = [lengths[i:i + 32] for i in range(0, 4096, 32)]
        for chunk in chunks:
            t0 = time.time()
            model32(*batch(chunk))
            torch.cuda.synchronize()
            times.append(time.time() - t0)
        elapsed = time.time() - start
        times = np.array(times) * 1e6
        results["batches_of_32_padded"] = {
            "requests": 4096, "infer_s": 4096 / elapsed,
            "tokens_s": float(np.sum(lengths)) / elapsed,
            "batch_p50_us": float(np.percentile(times, 50)),
            "batch_p99_us": float(np.percentile(times, 99))}
    log("  eager ->", results)
    return results


def prepare(args, model_path, out_dir, flags):
    """graphserve-capture prepare into out_dir: its exit, wall time and report lines."""
    cmd = [os.path.join(args.bin, "graphserve-capture"), "prepare", "--model", model_path,
           "--out", out_dir] + flags
    log("$", " ".join(cmd))
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    result = {"exit": done.returncode, "wall_s": round(time.time() - start, 1)}
    for key, pattern in (("buckets", r"^shape buckets: (.*)$"),
                         ("graphs", r"^(\d+ graphs \(.*?\)) captured"),
                         ("chosen", r"^(?:sizes and )?buckets chosen from the history: (.*)$"),
                         ("load", r"^loaded as the server loads it in (.*)$"),
                         ("reference", r"^worst relative error against the independent reference"
                                       r".*? ([\d.e+-]+), tolerance")):
        if (m := re.search(pattern, done.stdout, re.M)):
            result[key] = m[1]
    if done.returncode != 0:
        result["tail"] = (done.stdout + done.stderr)[-1500:]
    log("  ->", {k: v for k, v in result.items() if k != "tail"})
    return result


def prepared_repositories(args, bert, bert_path):
    """Part prepared: repositories written by prepare from its flags, served by core_bench."""
    result = {}
    root = os.path.join(args.work, "repo_prepared")
    result["bert_prepare"] = prepare(
        args, bert_path, os.path.join(root, "bert"),
        ["--batch-sizes", ",".join(map(str, SIZES)), "--buckets", ",".join(map(str, GRID)),
         "--pad", "attention_mask=0", "--streams", "2"])
    # What an operator adds by hand: dynamic batching, which prepare does not
    # choose (the hand-written grid config has the same).
    with open(os.path.join(root, "bert", "config.pbtxt"), "a") as f:
        f.write("dynamic_batching { max_queue_delay_microseconds: 200 }\n")
    dump = os.path.join(args.work, "dump_bert_prepared")
    result["bert"] = core_bench(args, root, "bert", args.mix, args.milliseconds, dump=dump)
    result["bert_check"] = compare_dumps(dump, text_reference(bert, "text_mask"), 16)
    log("  f64 ->", result["bert_check"])
    gpt2, gpt2_path = build_text("gpt2", "text", args.work)
    root = os.path.join(args.work, "repo_prepared_nobatch")
    result["gpt2_nobatch_prepare"] = prepare(
        args, gpt2_path, os.path.join(root, "gpt2"),
        ["--max-batch-size", "0", "--buckets", ",".join(f"1x{b}" for b in GRID),
         "--streams", "2"])
    dump = os.path.join(args.work, "dump_gpt2_nobatch")
    result["gpt2_nobatch"] = core_bench(args, root, "gpt2", args.mix, 3000, dump=dump)
    result["gpt2_nobatch_check"] = compare_dumps(dump, text_reference(gpt2, "text"), 16)
    log("  f64 ->", result["gpt2_nobatch_check"])
    return result


def history_grids(args, bert, bert_path, lengths):
    """Part history: the buckets prepare chooses from the mix's length history
    for given sizes, served by core_bench and checked against float64."""
    history = os.path.join(args.work, "bert_lengths.txt")
    values, counts = np.unique(lengths, return_counts=True)
    with open(history, "w") as f:
        f.write("# rows x length, count: the mix's draws, one row each\n")
        f.writelines(f"1x{v},{c}\n" for v, c in zip(values, counts))
    result = {}
    for tag, sizes, streams in (("6x16", SIZES, 2), ("3x32", PER_LENGTH_SIZES, 1)):
        root = os.path.join(args.work, f"repo_history_{tag}")
        result[f"bert_{tag}_prepare"] = prepare(
            args, bert_path, os.path.join(root, "bert"),
            ["--batch-sizes", ",".join(map(str, sizes)), "--history", history, "--max-graphs",
             "96", "--pad", "attention_mask=0", "--streams", str(streams)])
        with open(os.path.join(root, "bert", "config.pbtxt"), "a") as f:
            f.write("dynamic_batching { max_queue_delay_microseconds: 200 }\n")
        dump = os.path.join(args.work, f"dump_bert_history_{tag}")
        result[f"bert_{tag}"] = core_bench(args, root, "bert", args.mix, args.milliseconds,
                                           dump=dump)
        result[f"bert_{tag}_check"] = compare_dumps(dump, text_reference(bert, "text_mask"), 16)
        log("  f64 ->", result[f"bert_{tag}_check"])
    return result


class HttpTraffic:
    """Client threads sending the length mix to graphserve's HTTP endpoint
    (KServe v2, the output as binary data), each request 1-4 rows of one
    length; keeps the first answers of each phase for the float64 check."""

    def __init__(self, port, mix, threads=8, kept=6):
        import threading
        self.port, self.threads, self.kept = port, threads, kept
        self.lengths = mix_lengths(mix, 20000, 1)
        self.lock = threading.Lock()
        self.phase = "before"
        self.counts = {}
        self.samples = {}
        self.errors = []
        self.stop = threading.Event()
        self.workers = [threading.Thread(target=self.run, args=(i,)) for i in range(threads)]

    def request(self, connection, rng, k):
        import http.client
        rows = int(rng.integers(1, 5))
        length = int(self.lengths[k % len(self.lengths)])
        ids = rng.integers(1, 30000, size=(rows, length)).astype(np.int64)
        mask = np.ones((rows, length), np.int64)
        body = json.dumps({"inputs": [
            {"name": "input_ids", "shape": [rows, length], "datatype": "INT64",
             "data": ids.ravel().tolist()},
            {"name": "attention_mask", "shape": [rows, length], "datatype": "INT64",
             "data": mask.ravel().tolist()}],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}]})
        connection.request("POST", "/v2/models/bert/infer", body,
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            return rows, None, f"HTTP {response.status}: {data[:200]!r}"
        header = int(response.getheader("Inference-Header-Content-Length"))
        y = np.frombuffer(data[header:], np.float32).reshape(rows, length, -1)
        return rows, (ids, mask, y), None

    def run(self, index):
        import http.client
        rng = np.random.default_rng(100 + index)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        k = index
        while not self.stop.is_set():
            k += self.threads
            phase = self.phase
            try:
                rows, answer, error = self.request(connection, rng, k)
            except Exception as e:  # a dropped connection is a failure too
                rows, answer, error = 0, None, repr(e)[:200]
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            with self.lock:
                count = self.counts.setdefault(phase, {"requests": 0, "rows": 0, "failed": 0})
                if error:
                    count["failed"] += 1
                    self.errors.append(error)
                    continue
                count["requests"] += 1
                count["rows"] += rows
                kept = self.samples.setdefault(phase, [])
                if len(kept) < self.kept:
                    kept.append(answer)

    def start(self):
        for worker in self.workers:
            worker.start()

    def finish(self):
        self.stop.set()
        for worker in self.workers:
            worker.join()


def start_graphserve(args, root, model, ports, log_path):
    """A graphserve process serving `model` of `root` on the GPU at (http,
    grpc, metrics) `ports`, once it serves (or has exited: poll() says)."""
    http_port, grpc_port, metrics_port = ports
    server = subprocess.Popen(
        [os.path.join(args.bin, "graphserve"), "--model-repository", root, "--grpc-port",
         str(grpc_port), "--http-port", str(http_port), "--metrics-port", str(metrics_port),
         "--model-control-mode", "explicit", "--load-model", model, "--device", "cuda"],
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    for _ in range(1200):
        if server.poll() is not None or "serving gRPC on" in open(log_path).read():
            break
        time.sleep(0.1)
    return server


def stop_graphserve(server, result):
    """Stops a start_graphserve process; its exit status into `result`."""
    server.terminate()
    server.wait(timeout=60)
    result["server_exit"] = server.returncode


def shared_memory_rows(args, bert, bert_path, text_io):
    """Part shm: BERT served by a graphserve process at the 5-bucket grid,
    asked by graphserve-client at lengths no bucket has exactly, its tensors
    in the request, in system shared memory (pinned by the server) and in
    CUDA shared memory (left on the device: Note [Pitched row copies]), one
    at a time and then all at once (merged by dynamic batching); every answer
    against float64 at the request's exact length."""
    root = os.path.join(args.work, "repo_shm")
    write_repo(root, "bert", bert_path,
               config_text("bert", *text_io, [[b] for b in GRID], SIZES, 2, ["sequence"]))
    log_path = os.path.join(args.work, "shm_server.log")
    server = start_graphserve(args, root, "bert", (8110, 8111, 8112), log_path)
    reference = text_reference(bert, "text_mask")
    cases = [(1, 9), (3, 20), (2, 64), (1, 200), (4, 33)]
    rng = np.random.default_rng(5)
    result = {"cases": cases, "runs": []}
    try:
        if server.poll() is not None:
            result["server_log"] = open(log_path).read()[-1500:]
            return result

        def client(rows, length, memory, tag):
            case = os.path.join(args.work, "shm", f"{rows}x{length}")
            out_dir = os.path.join(case, tag)
            command = [os.path.join(args.bin, "graphserve-client"), "--url", "127.0.0.1:8111",
                       "infer", "--model", "bert", "--batch-size", str(rows),
                       "--shape", f"input_ids:{length}", "--shape", f"attention_mask:{length}",
                       "--input", f"input_ids={case}/ids.bin",
                       "--input", f"attention_mask={case}/mask.bin",
                       "--show", "0", "--output-dir", out_dir, "--shared-memory", memory,
                       "--output-shared-memory-size", str(rows * length * 768 * 4)]
            return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True), out_dir

        inputs = {}
        for rows, length in cases:
            case = os.path.join(args.work, "shm", f"{rows}x{length}")
            os.makedirs(case, exist_ok=True)
            ids = rng.integers(1000, 30000, size=(rows, length), dtype=np.int64)
            mask = np.ones((rows, length), dtype=np.int64)
            ids.tofile(f"{case}/ids.bin")
            mask.tofile(f"{case}/mask.bin")
            inputs[(rows, length)] = (ids, reference({"input_ids": ids, "attention_mask": mask}))

        def check(runs, phase):
            for (rows, length, memory), (process, out_dir) in runs.items():
                output, _ = process.communicate(timeout=120)
                ids, want = inputs[(rows, length)]
                run = {"phase": phase, "rows": rows, "length": length, "memory": memory,
                       "exit": process.returncode}
                if process.returncode == 0:
                    got = np.fromfile(os.path.join(out_dir, "y.bin"), dtype=np.float32)
                    if got.size == want.size:
                        got = got.reshape(want.shape)
                        run["max_error"] = float(np.abs(got - want).max() / np.abs(want).max())
                    else:
                        run["size"] = [got.size, want.size]
                else:
                    run["output"] = output[-800:]
                result["runs"].append(run)
                log("  shm", run)

        memories = ["none", "system", "cuda"]
        for memory in memories:  # one at a time: each request a chunk of its own
            for r, l in cases:
                check({(r, l, memory): client(r, l, memory, f"alone_{memory}")}, "alone")
        # All at once, every memory: dynamic batching merges rows of several
        # lengths and memories into one chunk.
        for repeat in range(3):
            runs = {}
            for memory in memories:
                for r, l in cases:
                    runs[(r, l, memory)] = client(r, l, memory, f"together{repeat}_{memory}")
            check(runs, f"together {repeat}")
        errors = [run.get("max_error", float("inf")) for run in result["runs"]]
        result["failed"] = sum(1 for run in result["runs"] if run["exit"] != 0)
        result["worst_error"] = max(errors)
        log("  shm ->", {k: v for k, v in result.items() if k != "runs"})
    finally:
        stop_graphserve(server, result)
    return result


def live_reselect(args, bert, bert_path, text_io, plan_rows="requests"):
    """Part reselect: select --from-metrics --max-graphs --reload on a live
    graphserve serving BERT, under traffic, planned from `plan_rows`
    (select's --plan-rows: requests, or chunk-demand)."""
    import urllib.request
    root = os.path.join(args.work, f"repo_reselect_{plan_rows}")
    write_repo(root, "bert", bert_path,
               config_text("bert", *text_io, [[b] for b in GRID], SIZES, 2, ["sequence"]))
    http_port, grpc_port, metrics_port = 8100, 8101, 8102
    log_path = os.path.join(args.work, f"reselect_{plan_rows}_server.log")
    server = start_graphserve(args, root, "bert", (http_port, grpc_port, metrics_port), log_path)
    result = {}
    try:
        if server.poll() is not None:
            result["server_log"] = open(log_path).read()[-1500:]
            return result
        traffic = HttpTraffic(http_port, args.mix)
        start = time.time()
        traffic.start()
        time.sleep(15)
        select = [os.path.join(args.bin, "graphserve-capture"), "select", "--from-metrics",
                  f"http://127.0.0.1:{metrics_port}/metrics", "--model", "bert",
                  "--max-graphs", "30", "--plan-rows", plan_rows, "--reload",
                  f"127.0.0.1:{grpc_port}"]
        log("$", " ".join(select))
        with traffic.lock:
            traffic.phase = "during"
        selected_at = time.time()
        done = subprocess.run(select, capture_output=True, text=True, timeout=300)
        result["select_s"] = round(time.time() - selected_at, 1)
        result["select_exit"] = done.returncode
        result["select"] = (done.stdout + done.stderr)[-3000:]
        log(result["select"])
        with traffic.lock:
            traffic.phase = "after"
        after_at = time.time()
        time.sleep(10)
        traffic.finish()
        elapsed = {"before": selected_at - start, "during": after_at - selected_at,
                   "after": time.time() - after_at}
        for phase, count in traffic.counts.items():
            count["requests_s"] = round(count["requests"] / max(elapsed[phase], 1e-9), 1)
        result["traffic"] = traffic.counts
        result["errors"] = traffic.errors[:5]
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v2/models/bert/config") as r:
            capture = json.load(r).get("capture", {})
        result["config_after"] = {k: capture.get(k) for k in ("batch_sizes", "buckets")}
        reference = text_reference(bert, "text_mask")
        worst = 0.0
        checked = 0
        for phase, kept in traffic.samples.items():
            for ids, mask, y in kept:
                want = reference({"input_ids": ids, "attention_mask": mask})
                worst = max(worst, float(np.abs(y - want).max() / np.abs(want).max()))
                checked += 1
        result["check"] = {"checked": checked, "max_error": worst}
        log("  reselect ->", {k: v for k, v in result.items() if k != "select"})
    finally:
        stop_graphserve(server, result)
    return result


def build_resnet_hw(work):
    """torchvision's ResNet-50 (seeded random weights), exported by TorchScript
    with its batch, height and width dynamic."""
    import torchvision
    torch.manual_seed(0)
    resnet = torchvision.models.resnet50(weights=None).eval()
    path = os.path.join(work, "resnet50_hw.onnx")
    with torch.no_grad():
        torch.onnx.export(resnet, (torch.randn(2, 3, 224, 224),), path, input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False,
                          dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"},
                                        "y": {0: "batch"}})
    return resnet, path


def eager_fallback(args, bert, bert_path, text_io):
    """Part eager: what no bucket takes, run at its own extents (capture.eager_extents).
    ResNet-50 at exact image sizes 224 and 320 (its padding changes the answer)
    asked for 288 x 288; BERT at buckets up to 256 over the mix, whose tail
    reaches 512. Answers against float64."""
    result = {}
    resnet, path = build_resnet_hw(args.work)
    root = write_repo(os.path.join(args.work, "repo_vision_eager"), "resnet50", path,
                      config_text("resnet50", [("x", "TYPE_FP32", [3, -1, -1])],
                                  [("y", "TYPE_FP32", [1000])], [[224, 224], [320, 320]],
                                  [1, 4], 1, ["height", "width"], eager_extents=[400, 400]))
    resnet64 = resnet.double().cuda()

    def reference(arrays):
        with torch.no_grad():
            return resnet64(torch.from_numpy(arrays["x"]).double().cuda()).cpu().numpy()
    for size in (288, 224):
        dump = os.path.join(args.work, f"dump_vision_eager_{size}")
        run = core_bench(args, root, "resnet50", f"lognormal:{size},0,{size}", 1000, dump=dump,
                         dump_count=2)
        run["check"] = compare_dumps(dump, reference, 2)
        log("  f64 ->", size, run["check"])
        result[f"resnet50_{size}"] = run
    root = write_repo(os.path.join(args.work, "repo_bert_eager"), "bert", bert_path,
                      config_text("bert", *text_io, [[b] for b in GRID[:-1]], SIZES, 2,
                                  ["sequence"], eager_extents=[GRID[-1]]))
    dump = os.path.join(args.work, "dump_bert_eager")
    run = core_bench(args, root, "bert", args.mix, 3000, dump=dump, dump_count=400)
    lengths = [np.load(f).shape[1] for f in glob.glob(os.path.join(dump, "*_input_ids.npy"))]
    run["dumped_past_256"] = sum(1 for n in lengths if n > GRID[-2])
    run["check"] = compare_dumps(dump, text_reference(bert, "text_mask"), 400)
    log("  f64 ->", run["check"], "requests past 256 among those checked:",
        run["dumped_past_256"])
    result["bert"] = run
    return result


def build_text(name, kind, work):
    torch.manual_seed(0)
    model = model_zoo.MODELS[name]["build"]().eval()
    path = os.path.join(work, f"{name}.onnx")
    model_zoo.export(model_zoo.wrap(model, kind), kind, path, "ts", torch.float32,
                     dynamic_sequence=True)
    return model, path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mix", default="lognormal:24,0.9,512,8")
    parser.add_argument("--milliseconds", type=int, default=8000)
    parser.add_argument("--parts",
                        default="bert,pad512,streams4,eager,gpt2,vision,grid8x8,per_length,prepared")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    report = {"mix": args.mix, "device": torch.cuda.get_device_name(0)}
    def save():  # after every part: a run cut short keeps what it measured
        with open(os.path.join(args.out, "bucket_serving.json"), "w") as f:
            json.dump(report, f, indent=1, default=str)

    text_io = ([("input_ids", "TYPE_INT64", [-1]), ("attention_mask", "TYPE_INT64", [-1])],
               [("y", "TYPE_FP32", [-1, 768])])

    bert, bert_path = build_text("bert", "text_mask", args.work)
    lengths = mix_lengths(args.mix, 4096, 0)
    report["mix_percentiles"] = {p: int(np.percentile(lengths, p)) for p in (50, 90, 99, 100)}

    def bert_repo(tag, buckets, sizes, streams=2, padding=None):
        root = os.path.join(args.work, f"repo_{tag}")
        return write_repo(root, "bert", bert_path,
                          config_text("bert", *text_io, [[b] for b in buckets], sizes, streams,
                                      ["sequence"], padding))

    if "bert" in parts:
        dump = os.path.join(args.work, "dump_bert")
        report["bert_grid"] = core_bench(args, bert_repo("grid", GRID, SIZES), "bert", args.mix,
                                         args.milliseconds, dump=dump)
        report["bert_grid_check"] = compare_dumps(dump, text_reference(bert, "text_mask"), 16)
        log("  f64 ->", report["bert_grid_check"])
        save()
    if "prepared" in parts:
        report["prepared"] = prepared_repositories(args, bert, bert_path)
        save()
    if "history" in parts:
        report["history"] = history_grids(args, bert, bert_path, lengths)
        save()
    if "reselect" in parts:
        report["reselect"] = live_reselect(args, bert, bert_path, text_io)
        save()
    if "reselect_demand" in parts:
        report["reselect_demand"] = live_reselect(args, bert, bert_path, text_io, "chunk-demand")
        save()
    if "shm" in parts:
        report["shm"] = shared_memory_rows(args, bert, bert_path, text_io)
        save()
    if "gpt2" in parts:
        gpt2, gpt2_path = build_text("gpt2", "text", args.work)
        root = write_repo(os.path.join(args.work, "repo_gpt2"), "gpt2", gpt2_path,
                          config_text("gpt2", [("input_ids", "TYPE_INT64", [-1])],
                                      [("y", "TYPE_FP32", [-1, 768])], [[b] for b in GRID],
                                      SIZES, 2, ["sequence"]))
        dump = os.path.join(args.work, "dump_gpt2")
        report["gpt2_grid"] = core_bench(args, root, "gpt2", args.mix, 3000, dump=dump)
        report["gpt2_grid_check"] = compare_dumps(dump, text_reference(gpt2, "text"), 16)
        log("  f64 ->", report["gpt2_grid_check"])
        save()
    if "vision" in parts:
        resnet, path = build_resnet_hw(args.work)
        root = write_repo(os.path.join(args.work, "repo_vision"), "resnet50", path,
                          config_text("resnet50", [("x", "TYPE_FP32", [3, -1, -1])],
                                      [("y", "TYPE_FP32", [1000])],
                                      [[s, s] for s in IMAGE_SIZES], [1, 4, 8], 1,
                                      ["height", "width"]))
        resnet64 = resnet.double().cuda()
        report["vision"] = {}
        for size in IMAGE_SIZES:
            dump = os.path.join(args.work, f"dump_vision_{size}")
            run = core_bench(args, root, "resnet50", f"lognormal:{size},0,{size}", 1000, dump=dump,
                             dump_count=2)

            def reference(arrays):
                with torch.no_grad():
                    return resnet64(torch.from_numpy(arrays["x"]).double().cuda()).cpu().numpy()
            run["check"] = compare_dumps(dump, reference, 2)
            log("  f64 ->", size, run["check"])
            report["vision"][size] = run
            save()

    if "eager" in parts:
        report["eager_fallback"] = eager_fallback(args, bert, bert_path, text_io)
        save()
    if "streams4" in parts:
        report["bert_4_streams"] = core_bench(args, bert_repo("streams4", GRID, SIZES, streams=4),
                                              "bert", args.mix, 2000)
        save()
    if "grid8x8" in parts:
        report["bert_8x8"] = core_bench(args, bert_repo("grid8x8", GRID_8X8[0], GRID_8X8[1],
                                                        streams=1), "bert", args.mix, 2000)
        save()
    if "planner_costs" in parts:
        written = os.path.join(args.work, "bert_costs.pbtxt")
        report["bert_costs_measured"] = core_bench(args, bert_repo("costs", GRID, SIZES), "bert",
                                                   args.mix, 1000, write_config=written)
        with open(written) as f:
            measured = f.read()
        roots = {"own": write_repo(os.path.join(args.work, "repo_own_costs"), "bert", bert_path,
                                   measured),
                 "largest": write_repo(os.path.join(args.work, "repo_largest_costs"), "bert",
                                       bert_path, largest_bucket_costs(measured))}
        report["planner_costs"] = []
        for plans in ("own", "largest", "largest", "own"):
            run = core_bench(args, roots[plans], "bert", args.mix, args.milliseconds)
            run["plans"] = plans
            report["planner_costs"].append(run)
            save()
    if "fine_grid" in parts:
        # The 15 buckets with the fewest padded positions for the mix's lengths
        # (a length histogram as the server records it) and the mix's longest,
        # 512 (core_bench draws its own requests), every size at each.
        fine = sorted(set(best_grid(lengths, 15)) | {GRID[-1]})
        report["bert_fine_grid"] = core_bench(args, bert_repo("fine_grid", fine, SIZES), "bert",
                                              args.mix, args.milliseconds)
        report["bert_fine_grid"]["grid"] = fine
        save()
        # The same buckets with per_length's sizes and one stream.
        report["bert_fine_grid_1_stream"] = core_bench(
            args, bert_repo("fine_grid_1_stream", fine, PER_LENGTH_SIZES, streams=1), "bert",
            args.mix, args.milliseconds)
        save()
    if "pad512" in parts:
        report["bert_pad512"] = core_bench(args, bert_repo("pad512", [512], SIZES), "bert",
                                           args.mix, args.milliseconds)
        save()
    if "eager" in parts:
        report["eager"] = eager_baselines(bert, lengths)
        save()
    if "per_length" in parts:
        report["bert_per_length"] = core_bench(
            args, bert_repo("per_length", list(range(8, 513, 8)), PER_LENGTH_SIZES, streams=1,
                            padding="exact"), "bert", args.mix, args.milliseconds, timeout=900)
        save()
    save()
    log(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
