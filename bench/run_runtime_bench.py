#!/usr/bin/env python3
"""GraphServe's CUDA-graph replay and eager runtime against PyTorch eager and
PyTorch CUDA graphs, on the GPU.

For each model of bench/export_models.py and each batch size B:
  1. draw seeded normal inputs and save them as <out>/inputs/<model>/<B>/<name>.npy;
  2. time PyTorch eager (float32, TF32 off, MHA fast path off) with CUDA events:
     warm-up, then the median of many runs issued back to back;
  3. capture the module in a PyTorch CUDA graph (static inputs on the device,
     3 warm-up runs on a side stream, torch.cuda.graph under inference_mode)
     and time g.replay() the same way;
  4. compute a float64 reference (the same module in float64, on the GPU);
then run //bench:runtime_bench on the exported model for all batch sizes,
which writes its eager outputs to <out>/outputs/<model>/<B>/, its graph
replay's outputs (newer binaries) to <out>/outputs_graph/<model>/<B>/ and its
timings to <out>/ours_<model>.json, and compare: relative error
||out - ref|| / ||ref|| for our eager and graph outputs and for PyTorch's
float32 eager and graph outputs.

PyTorch runs with torch.backends.cudnn.benchmark = True (cuDNN autotunes each
shape in the warm-up runs and keeps its fastest algorithm), TF32 off unless
--allow-tf32.

CNNs (export_models.CNN_NAMES, e.g. --models cnn --batch-sizes 1,3,8,32) get a
second pass with TF32 on for both sides at the --tf32-batch-sizes that are
also in --batch-sizes (default 1,8,32): PyTorch with
torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
True, ours with runtime_bench --allow-tf32 (outputs under outputs_tf32/ and
outputs_graph_tf32/, timings in ours_<model>_tf32.json). Their table compares
our graph replay with PyTorch's CUDA-graph replay, TF32 off and on; the
target ours / torch <= 1.0 at batch 1 and 8 is reported, not asserted.

--schedules single,wavefront,asap,auto (e.g. with --models multistream) has
runtime_bench capture each batch size once per multi-stream schedule policy
and time their bare replays side by side (its records' "schedules"); the
"Multi-lane schedules" table then gives each policy's lanes, time and speedup
over single, auto's choice, auto / single, and the best policy and single
against PyTorch's CUDA-graph replay. Without --schedules (or with "single"
alone) the binary is not passed the flag and times the single-lane graph only.

Prints markdown tables and writes them to <out>/runtime_bench.md, with all
numbers in <out>/runtime_bench.json (CNN rows under "cnn_rows", multi-lane
rows under "schedule_rows"). The design's speed targets (ours graph / torch
graph <= 0.8 on mlp, <= 1.0 on encoder) are reported, not asserted; so is an
auto schedule slower than single by more than 2%. Exits 1 when any of our
relative errors (eager, or graph where the binary wrote graph outputs)
exceeds --tolerance or is NaN, or a TF32 pass's error of ours is NaN (its
size is reported, not checked), or a schedule's replay is not bit-identical
to the single-lane eager run, or when the binary fails, after printing
everything; 0 otherwise. The graph and schedule keys of ours_<model>.json are
optional: an older binary without them gives "-" in their columns and no
multi-lane table.

Usage (on the GPU machine):
  python3 bench/run_runtime_bench.py --bin out/runtime_bench/runtime_bench --out $OUT/bench
  python3 bench/run_runtime_bench.py --bin ... --out ... --models cnn --batch-sizes 1,3,8,32
  python3 bench/run_runtime_bench.py --bin ... --out ... --models multistream --batch-sizes 1,8 \
      --schedules single,wavefront,asap,auto
Shared libraries in <dir of --bin>/lib (bench/bundle_runtime_bench.sh puts
them there) are put on the binary's LD_LIBRARY_PATH.
"""

import argparse
import glob
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402  (beside this file)

DEFAULT_BATCH_SIZES = "1,2,4,8,16,32,64,128,256,512,1024,2048"

# The design's targets for ours graph / torch graph (medians, compute only);
# a model without an entry is reported without a target.
GRAPH_RATIO_TARGETS = {"mlp": 0.8, "encoder": 1.0}

# The CNN issue's target for ours graph / torch graph, per batch size, TF32
# off and on alike; other batch sizes are reported without one.
CNN_RATIO_TARGETS = {1: 1.0, 8: 1.0}

DEFAULT_TF32_BATCH_SIZES = "1,8,32"

# runtime_bench --schedules' policies (runtime/schedule.h's, and auto, which
# capture/schedule_choice.h chooses among them by timing).
SCHEDULE_POLICIES = ("single", "wavefront", "asap", "auto")

# Auto keeps single unless another policy beats it by more than 2%
# (ScheduleChoiceOptions::min_gain), so auto slower than single by more than
# that is flagged: a wrong choice, or timing noise larger than the margin.
AUTO_SLOWER_LIMIT = 1.02

# Eager runs of the module on a side stream before capturing it, as the
# PyTorch CUDA graphs documentation recommends.
TORCH_GRAPH_SIDE_STREAM_WARMUP = 3

# Where the binary's graph replay writes its outputs, per model:
# <out>/OURS_GRAPH_OUTPUTS/<model>/<B>/<output name>.npy.
OURS_GRAPH_OUTPUTS = "outputs_graph"
# The CNN TF32 pass's suffix on those folders and on ours_<model>.json.
TF32_SUFFIX = "_tf32"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="path to the runtime_bench binary")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--batch-sizes", default=DEFAULT_BATCH_SIZES,
                        help="comma-separated batch sizes, every model")
    parser.add_argument("--models", default="default",
                        help="comma-separated names of " + ",".join(export_models.SPECS)
                             + " and groups " + ",".join(export_models.MODEL_GROUPS)
                             + " (default: " + ",".join(export_models.MODEL_NAMES) + ")")
    parser.add_argument("--tf32-batch-sizes", default=DEFAULT_TF32_BATCH_SIZES,
                        help="CNNs only: the sizes (of --batch-sizes) of the second pass with TF32 "
                             "on for both sides; empty: no such pass")
    parser.add_argument("--schedules", default="single",
                        help="comma-separated schedule policies of " + ",".join(SCHEDULE_POLICIES)
                             + ", passed to runtime_bench --schedules: each batch size captured "
                               "and timed with each (include single for the speedups)")
    parser.add_argument("--models-dir", default=None,
                        help="take <model>.onnx from this folder (bench/export_models.py --out) "
                             "instead of exporting into <out>/models")
    parser.add_argument("--warmup", type=int, default=20, help="untimed runs, both sides")
    parser.add_argument("--iters", type=int, default=200, help="timed runs, both sides")
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest relative error of ours that passes")
    parser.add_argument("--allow-tf32", action="store_true",
                        help="TF32 GEMMs on both sides (expect errors near 3e-4: raise --tolerance)")
    parser.add_argument("--lib-dir", default=None,
                        help="prepended to the binary's LD_LIBRARY_PATH "
                             "(default: <dir of --bin>/lib if it exists)")
    parser.add_argument("--seed", type=int, default=20261121, help="base seed of the inputs")
    args = parser.parse_args()
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b]
    args.tf32_batch_sizes = [int(b) for b in args.tf32_batch_sizes.split(",") if b]
    args.schedules = list(dict.fromkeys(p.strip() for p in args.schedules.split(",") if p.strip()))
    unknown = [p for p in args.schedules if p not in SCHEDULE_POLICIES]
    if unknown:
        parser.error(f"--schedules: unknown policies {unknown}; known: "
                     + ",".join(SCHEDULE_POLICIES))
    if not args.schedules:
        parser.error("--schedules names no policy")
    try:
        args.models = export_models.resolve_models(args.models)
    except ValueError as error:
        parser.error(str(error))
    if not args.models or not args.batch_sizes:
        parser.error("need at least one model and one batch size")
    if min(args.batch_sizes + args.tf32_batch_sizes) < 1:
        parser.error("batch sizes must be >= 1")
    if args.iters < 1 or args.warmup < 0:
        parser.error("need --iters >= 1 and --warmup >= 0")
    return args


def set_tf32(allowed):
    torch.backends.cuda.matmul.allow_tf32 = allowed
    torch.backends.cudnn.allow_tf32 = allowed


def make_inputs(spec, batch, seed):
    """Seeded normal float32 inputs, one array per model input, C order."""
    rng = np.random.default_rng([seed, batch, export_models.ALL_MODEL_NAMES.index(spec.name)])
    return [np.ascontiguousarray(rng.standard_normal((batch, *shape), dtype=np.float32))
            for _, shape in spec.inputs]


def time_cuda(fn, warmup, iters):
    """Median, min and max microseconds of fn(), each call between two CUDA
    events on the current stream, calls issued back to back and synchronised
    once at the end (as runtime_bench times ours)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for start, end in zip(starts, ends):
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    micros = sorted(1000.0 * start.elapsed_time(end) for start, end in zip(starts, ends))
    return float(np.median(micros)), micros[0], micros[-1]


def time_torch(model, inputs, warmup, iters):
    """time_cuda of model(*inputs) under inference_mode."""
    with torch.inference_mode():
        return time_cuda(lambda: model(*inputs), warmup, iters)


def to_float64(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().double().cpu().numpy() for o in outs]


def run_module(model, inputs):
    with torch.inference_mode():
        out = model(*inputs)
        torch.cuda.synchronize()
    return to_float64(out)


def time_torch_graph(model, inputs, warmup, iters):
    """Captures model(*inputs) in a CUDA graph (inputs: static device tensors)
    and times graph.replay() as time_cuda does. Returns dict(torch_graph_us,
    torch_graph_min_us, torch_graph_max_us, torch_graph_capture_ms, outs),
    outs being the first replay's outputs in float64 on the host. The graph
    and its memory pool are freed before returning."""
    graph = static_out = None
    try:
        with torch.inference_mode():
            # Warm-up on a side stream (lazy initialisation, cuBLAS workspaces,
            # allocator) so that none of it lands in the capture.
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(TORCH_GRAPH_SIDE_STREAM_WARMUP):
                    model(*inputs)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            began = time.perf_counter()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = model(*inputs)
            torch.cuda.synchronize()
            capture_ms = 1000.0 * (time.perf_counter() - began)
            graph.replay()
            torch.cuda.synchronize()
            outs = to_float64(static_out)
        median, fastest, slowest = time_cuda(graph.replay, warmup, iters)
        return dict(torch_graph_us=median, torch_graph_min_us=fastest, torch_graph_max_us=slowest,
                    torch_graph_capture_ms=capture_ms, outs=outs)
    finally:
        # One graph (and private memory pool) at a time, not one per batch size.
        torch.cuda.synchronize()
        del graph, static_out
        torch.cuda.empty_cache()


def rel_err(outs, refs):
    """||out - ref|| / ||ref|| over all outputs together; NaN if any output
    has a NaN or infinity or a shape that differs from the reference."""
    num = den = 0.0
    for out, ref in zip(outs, refs):
        if out.shape != ref.shape or not np.all(np.isfinite(out)):
            return math.nan
        diff = out.astype(np.float64) - ref
        num += float(np.sum(diff * diff))
        den += float(np.sum(ref * ref))
    return math.sqrt(num) / math.sqrt(den) if den > 0 else math.sqrt(num)


def torch_cuda_lib_dirs():
    """Folders of the CUDA libraries that PyTorch's wheels bring (nvidia/*/lib)."""
    dirs = []
    for root in sys.path:
        for lib in glob.glob(os.path.join(root, "nvidia", "**", "libcublasLt.so*"), recursive=True) + \
                glob.glob(os.path.join(root, "nvidia", "**", "libcudart.so*"), recursive=True):
            if os.path.dirname(lib) not in dirs:
                dirs.append(os.path.dirname(lib))
    return dirs


def binary_env(args):
    """The binary's environment: the carried libraries first; PyTorch's CUDA
    libraries as a fallback when the toolkit folder in the binary's rpath
    has no cuBLASLt."""
    env = dict(os.environ)
    paths = []
    lib_dir = args.lib_dir or os.path.join(os.path.dirname(os.path.abspath(args.bin)), "lib")
    if os.path.isdir(lib_dir):
        paths.append(os.path.abspath(lib_dir))
    if env.get("LD_LIBRARY_PATH"):
        paths.append(env["LD_LIBRARY_PATH"])
    if not glob.glob("/usr/local/cuda/lib64/libcublasLt.so*"):
        paths.extend(torch_cuda_lib_dirs())
    if paths:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(paths)
        print(f"LD_LIBRARY_PATH={env['LD_LIBRARY_PATH']}", flush=True)
    return env


def help_flags(help_text):
    """Flag names listed in runtime_bench --help ("  --name VALUE")."""
    return set(re.findall(r"^\s*--([A-Za-z0-9][A-Za-z0-9_-]*)", help_text, re.MULTILINE))


def graph_outputs_flag(flags):
    """The binary's flag for the graph replay's output directory, if it has
    one (a newer binary may take it as a flag rather than derive the folder);
    None otherwise, so that an older binary is never passed an unknown flag."""
    for name in ("graph-outputs", "outputs-graph", "graph_outputs", "outputs_graph"):
        if name in flags:
            return name
    return None


def run_ours(args, onnx_path, name, env, batch_sizes, allow_tf32, suffix="",
             schedules=("single",)):
    """Runs the binary on one model at batch_sizes; its outputs go to
    <out>/outputs<suffix>/<model>/ and <out>/outputs_graph<suffix>/<model>/,
    its records to <out>/ours_<model><suffix>.json. schedules go to
    --schedules unless they are single alone, the binary's default (so that
    an older binary, without the flag, still runs). Returns ({batch: record}
    or None, success)."""
    json_path = os.path.join(args.out, f"ours_{name}{suffix}.json")
    graph_dir = os.path.join(args.out, OURS_GRAPH_OUTPUTS + suffix, name)
    command = [
        os.path.abspath(args.bin),
        "--model", onnx_path,
        "--batch-sizes", ",".join(str(b) for b in batch_sizes),
        "--inputs", os.path.join(args.out, "inputs", name),
        "--outputs", os.path.join(args.out, "outputs" + suffix, name),
        "--warmup", str(args.warmup),
        "--iters", str(args.iters),
        "--json", json_path,
    ]
    flag = graph_outputs_flag(args.bin_flags)
    if flag:
        command += [f"--{flag}", graph_dir]
    if allow_tf32:
        command.append("--allow-tf32")
    if list(schedules) != ["single"]:
        command += ["--schedules", ",".join(schedules)]
    print("+ " + " ".join(command), flush=True)
    if os.path.exists(json_path):
        os.remove(json_path)
    # Graph outputs of an earlier run must not pass for this run's.
    shutil.rmtree(graph_dir, ignore_errors=True)
    result = subprocess.run(command, env=env)
    records = None
    # On failure the binary still writes the batch sizes it finished.
    if os.path.exists(json_path):
        with open(json_path) as f:
            records = {record["batch"]: record for record in json.load(f)}
    if result.returncode != 0:
        print(f"runtime_bench failed on {name} with exit code {result.returncode}", flush=True)
    return records, result.returncode == 0


def load_outputs(args, spec, batch, subdir="outputs"):
    """Our outputs of one batch size from <out>/<subdir>/<model>/<B>/, or None
    if any is missing."""
    outs = []
    for out_name in spec.output_names:
        path = os.path.join(args.out, subdir, spec.name, str(batch), f"{out_name}.npy")
        if not os.path.exists(path):
            return None
        outs.append(np.load(path).astype(np.float64))
    return outs


def has_graph_outputs(out_dir, model, subdir=OURS_GRAPH_OUTPUTS):
    """Whether the binary wrote any graph replay output for the model."""
    return bool(glob.glob(os.path.join(out_dir, subdir, model, "*", "*.npy")))


def our_errors(args, spec, batch, refs, record, suffix=""):
    """(rel err of our eager outputs, of our graph outputs) of one batch size
    of a run_ours(..., suffix) against refs: NaN where the binary has no
    record or an output is missing; the graph's None when the binary wrote
    no graph outputs for the model at all (an older binary)."""
    outs = load_outputs(args, spec, batch, "outputs" + suffix) if record is not None else None
    err = rel_err(outs, refs) if outs is not None else math.nan
    err_graph = None
    if has_graph_outputs(args.out, spec.name, OURS_GRAPH_OUTPUTS + suffix):
        # The binary writes graph outputs: each batch size must have them.
        graph_outs = load_outputs(args, spec, batch, OURS_GRAPH_OUTPUTS + suffix)
        err_graph = rel_err(graph_outs, refs) if graph_outs is not None else math.nan
    return err, err_graph


# --- Pure functions: rows, table, summary (no torch or numpy). ---

def ratio(numerator, denominator):
    """numerator / denominator, or None when either is missing, not finite or
    the denominator is not positive."""
    if numerator is None or denominator is None:
        return None
    if not (math.isfinite(numerator) and math.isfinite(denominator)) or denominator <= 0:
        return None
    return numerator / denominator


def make_row(model, batch, record, torch_result, err_ours, err_ours_graph):
    """One table/JSON row. record: the binary's record for this batch size
    (None if it has none; any key may be missing or null); torch_result:
    dict with torch_us, torch_min_us, torch_max_us, rel_err_torch and,
    optionally, torch_graph_us, torch_graph_min_us, torch_graph_max_us,
    torch_graph_capture_ms, rel_err_torch_graph; err_ours_graph: None when
    the binary wrote no graph outputs."""
    rec = record or {}
    get = torch_result.get
    compute_us = rec.get("eager_compute_us")
    graph_us = rec.get("graph_compute_us")
    return dict(
        model=model, batch=batch,
        # Eager vs eager (as before).
        ours_full_us=rec.get("eager_full_us"),
        ours_compute_us=compute_us,
        ours_compute_min_us=rec.get("compute_min_us"),
        ours_compute_max_us=rec.get("compute_max_us"),
        torch_us=get("torch_us"),
        torch_min_us=get("torch_min_us"),
        torch_max_us=get("torch_max_us"),
        speedup=ratio(get("torch_us"), compute_us),
        rel_err_ours=err_ours,
        rel_err_torch=get("rel_err_torch"),
        fused_epilogues=rec.get("fused_epilogues"),
        arena_bytes=rec.get("arena_bytes"),
        arena_lower_bound_bytes=rec.get("arena_lower_bound_bytes"),
        rerun_max_abs_diff=rec.get("rerun_max_abs_diff"),
        # CUDA graphs.
        ours_graph_us=graph_us,
        ours_graph_full_us=rec.get("graph_full_us"),
        ours_graph_min_us=rec.get("graph_min_us"),
        ours_graph_max_us=rec.get("graph_max_us"),
        ours_graph_rel_err_vs_eager=rec.get("graph_rel_err_vs_eager"),
        capture_ms=rec.get("capture_ms"),
        torch_graph_us=get("torch_graph_us"),
        torch_graph_min_us=get("torch_graph_min_us"),
        torch_graph_max_us=get("torch_graph_max_us"),
        torch_graph_capture_ms=get("torch_graph_capture_ms"),
        ours_graph_over_torch_graph=ratio(graph_us, get("torch_graph_us")),
        ours_graph_over_ours_eager=ratio(graph_us, compute_us),
        torch_eager_over_ours_graph=ratio(get("torch_us"), graph_us),
        rel_err_ours_graph=err_ours_graph,
        rel_err_torch_graph=get("rel_err_torch_graph"),
    )


def make_cnn_row(row, torch_result, tf32_record, err_ours_tf32, err_ours_graph_tf32,
                 targets=CNN_RATIO_TARGETS):
    """One row of the CNN table from the model's make_row row (the TF32-off
    pass) and the TF32 pass: tf32_record is the binary's TF32 record (None
    if it has none), torch_result may hold torch_graph_us_tf32 and
    rel_err_torch_graph_tf32; err_ours_tf32 is None when the batch size had
    no TF32 pass, err_ours_graph_tf32 also when the binary wrote no graph
    outputs. TF32 values stay None where not measured."""
    rec = tf32_record or {}
    get = torch_result.get
    graph_tf32 = rec.get("graph_compute_us")
    return dict(
        model=row["model"], batch=row["batch"],
        rel_err_ours=row.get("rel_err_ours"),
        rel_err_ours_graph=row.get("rel_err_ours_graph"),
        rel_err_torch=row.get("rel_err_torch"),
        rel_err_torch_graph=row.get("rel_err_torch_graph"),
        ours_graph_us=row.get("ours_graph_us"),
        torch_graph_us=row.get("torch_graph_us"),
        ours_over_torch=row.get("ours_graph_over_torch_graph"),
        ours_graph_us_tf32=graph_tf32,
        torch_graph_us_tf32=get("torch_graph_us_tf32"),
        ours_over_torch_tf32=ratio(graph_tf32, get("torch_graph_us_tf32")),
        rel_err_ours_tf32=err_ours_tf32,
        rel_err_ours_graph_tf32=err_ours_graph_tf32,
        rel_err_torch_graph_tf32=get("rel_err_torch_graph_tf32"),
        ratio_target=targets.get(row["batch"]),
    )


def cnn_summary(cnn_rows):
    """Per CNN row with a ratio target, TF32 off and on: a list of dicts
    (model, batch, tf32, ratio, target, meets), meets None where the ratio
    was not measured."""
    summary = []
    for row in cnn_rows:
        target = row.get("ratio_target")
        if target is None:
            continue
        for tf32, key in ((False, "ours_over_torch"), (True, "ours_over_torch_tf32")):
            value = row.get(key)
            summary.append(dict(model=row["model"], batch=row["batch"], tf32=tf32, ratio=value,
                                target=target, meets=None if value is None else value <= target))
    return summary


def cnn_summary_lines(summary):
    """One line per model and TF32 setting of cnn_summary."""
    lines = []
    groups = {}
    for s in summary:
        groups.setdefault((s["model"], s["tf32"]), []).append(s)
    for (model, tf32), entries in groups.items():
        parts = []
        for s in entries:
            if s["ratio"] is None:
                verdict = "not measured"
            else:
                verdict = f"{s['ratio']:.2f} ({'meets' if s['meets'] else 'MISSES'})"
            parts.append(f"B={s['batch']} {verdict}")
        target = ", ".join(sorted({f"{s['target']:.1f}" for s in entries}))
        lines.append(f"{model}, TF32 {'on' if tf32 else 'off'}: ours graph / torch graph "
                     f"(target <= {target}, reported only): " + ", ".join(parts))
    return lines


def make_schedule_row(row, record):
    """One row of the multi-lane table from the model's make_row row and the
    binary's record of the same batch size, None unless the record has two
    "schedules" entries or more. Per measured policy, in the record's order
    (that of --schedules): <policy>_lanes, <policy>_us and <policy>_speedup =
    single us / policy us (None without a single entry). Then auto_chosen
    and auto_over_single; best_policy, the fastest policy other than auto
    (auto replays one of them), with best_us and best_speedup; best and
    single over PyTorch's CUDA-graph replay; not_bit_identical, the policies
    whose replay's outputs differ from the single-lane eager run's."""
    entries = (record or {}).get("schedules") or []
    if len(entries) < 2:
        return None
    by_policy = {}
    for entry in entries:
        by_policy.setdefault(entry.get("policy"), entry)
    single_us = by_policy.get("single", {}).get("graph_compute_us")
    result = dict(model=row["model"], batch=row["batch"], policies=list(by_policy))
    for policy, entry in by_policy.items():
        result[f"{policy}_lanes"] = entry.get("lanes")
        result[f"{policy}_us"] = entry.get("graph_compute_us")
        result[f"{policy}_speedup"] = ratio(single_us, entry.get("graph_compute_us"))
    # ratio(1, us) is None where us is missing, not finite or not positive.
    timed = [(entry["graph_compute_us"], policy) for policy, entry in by_policy.items()
             if policy != "auto" and ratio(1.0, entry.get("graph_compute_us")) is not None]
    best_us, best_policy = min(timed) if timed else (None, None)
    auto = by_policy.get("auto", {})
    torch_graph_us = row.get("torch_graph_us")
    result.update(
        auto_chosen=auto.get("chosen"),
        auto_over_single=ratio(auto.get("graph_compute_us"), single_us),
        best_policy=best_policy, best_us=best_us, best_speedup=ratio(single_us, best_us),
        torch_graph_us=torch_graph_us,
        best_over_torch_graph=ratio(best_us, torch_graph_us),
        single_over_torch_graph=ratio(single_us, torch_graph_us),
        not_bit_identical=[entry.get("policy") for entry in entries
                           if entry.get("bit_identical_to_single_eager") is False],
    )
    return result


def schedule_columns(schedule_rows):
    """TABLE_COLUMNS-style columns of the multi-lane table: lanes, time and
    speedup of each policy measured in any row, in order of first appearance;
    auto's columns only where auto was measured."""
    policies = list(dict.fromkeys(p for row in schedule_rows for p in row["policies"]))
    columns = [("model", "model", "s"), ("B", "batch", "d")]
    for policy in policies:
        columns += [(f"{policy} lanes", f"{policy}_lanes", "d"),
                    (f"{policy} us", f"{policy}_us", ".1f")]
        if policy != "single":
            columns.append((f"{policy} speedup", f"{policy}_speedup", ".2f"))
    if "auto" in policies:
        columns += [("auto chose", "auto_chosen", "s"),
                    ("auto / single", "auto_over_single", ".3f")]
    return columns + [
        ("best", "best_policy", "s"),
        ("best speedup", "best_speedup", ".2f"),
        ("torch graph us", "torch_graph_us", ".1f"),
        ("best / torch graph", "best_over_torch_graph", ".2f"),
        ("single / torch graph", "single_over_torch_graph", ".2f"),
        ("bit-identical", "bit_identical", "s"),
    ]


def schedule_summary_lines(schedule_rows, auto_limit=AUTO_SLOWER_LIMIT):
    """Per row of make_schedule_row: the best policy and its speedup over
    single; then a flag line where auto is slower than single by more than
    auto_limit allows, and one where a replay is not bit-identical."""
    lines = []
    for row in schedule_rows:
        head = f"{row['model']} B={row['batch']}"
        if row["best_policy"] is None:
            lines.append(f"{head}: best policy not measured")
        elif row["best_speedup"] is None:
            lines.append(f"{head}: best policy {row['best_policy']} ({row['best_us']:.1f} us); "
                         f"speedup over single not measured")
        else:
            lines.append(f"{head}: best policy {row['best_policy']}, {row['best_speedup']:.2f}x "
                         f"single ({row['best_us']:.1f} us vs {row['single_us']:.1f} us)")
        slower = row["auto_over_single"]
        if slower is not None and slower > auto_limit:
            lines.append(f"AUTO SLOWER THAN SINGLE BY >{100 * (auto_limit - 1):.0f}%: {head}: "
                         f"auto (chose {row['auto_chosen'] or '-'}) {row['auto_us']:.1f} us vs "
                         f"single {row['single_us']:.1f} us, auto / single {slower:.3f}")
        if row["not_bit_identical"]:
            lines.append(f"NOT BIT-IDENTICAL: {head}: {', '.join(row['not_bit_identical'])}: the "
                         f"replay's outputs differ from the single-lane eager run's (fails the run)")
    return lines


def schedule_report_header(schedules, auto_limit=AUTO_SLOWER_LIMIT):
    return (
        f"Multi-lane schedules (runtime_bench --schedules {','.join(schedules)}): runtime_bench "
        f"captures each batch size once per policy and times the graphs' bare replays (inputs "
        f"on the device) in interleaved rounds, in one process: medians in us. lanes = the "
        f"graph's streams; speedup = single us / policy us (> 1: faster than one lane); best = "
        f"the fastest policy other than auto; auto / single > {auto_limit:g} is flagged (auto "
        f"keeps single unless another policy beats it by more than 2%); torch graph = "
        f"PyTorch's CUDA-graph replay from the first table. Every replay's outputs must equal "
        f"the single-lane eager run's byte for byte (NOT BIT-IDENTICAL fails the run).\n")


def fmt(value, spec):
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return format(value, spec)


TABLE_COLUMNS = [
    # (heading, row key, format)
    ("model", "model", "s"),
    ("B", "batch", "d"),
    ("ours graph us", "ours_graph_us", ".1f"),
    ("ours eager us (compute)", "ours_compute_us", ".1f"),
    ("torch eager us", "torch_us", ".1f"),
    ("torch graph us", "torch_graph_us", ".1f"),
    ("ours graph / torch graph", "ours_graph_over_torch_graph", ".2f"),
    ("ours graph / ours eager", "ours_graph_over_ours_eager", ".2f"),
    ("torch eager / ours graph", "torch_eager_over_ours_graph", ".2f"),
    ("rel err ours graph", "rel_err_ours_graph", ".2e"),
    ("rel err torch graph", "rel_err_torch_graph", ".2e"),
    ("capture ms", "capture_ms", ".1f"),
]

EAGER_COLUMNS = [
    ("model", "model", "s"),
    ("B", "batch", "d"),
    ("ours eager us (full)", "ours_full_us", ".1f"),
    ("ours eager us (compute)", "ours_compute_us", ".1f"),
    ("torch eager us", "torch_us", ".1f"),
    ("speedup (torch eager / ours eager compute)", "speedup", ".2f"),
    ("rel err ours eager", "rel_err_ours", ".2e"),
    ("rel err torch eager", "rel_err_torch", ".2e"),
    ("ours graph us (full)", "ours_graph_full_us", ".1f"),
    ("ours graph rel err vs ours eager", "ours_graph_rel_err_vs_eager", ".2e"),
]


CNN_COLUMNS = [
    ("model", "model", "s"),
    ("B", "batch", "d"),
    ("rel err ours eager", "rel_err_ours", ".2e"),
    ("rel err ours graph", "rel_err_ours_graph", ".2e"),
    ("rel err torch graph", "rel_err_torch_graph", ".2e"),
    ("ours graph us", "ours_graph_us", ".1f"),
    ("torch graph us", "torch_graph_us", ".1f"),
    ("ours / torch", "ours_over_torch", ".2f"),
    ("ours graph us TF32", "ours_graph_us_tf32", ".1f"),
    ("torch graph us TF32", "torch_graph_us_tf32", ".1f"),
    ("ours / torch TF32", "ours_over_torch_tf32", ".2f"),
    ("rel err ours graph TF32", "rel_err_ours_graph_tf32", ".2e"),
    ("rel err torch graph TF32", "rel_err_torch_graph_tf32", ".2e"),
    ("target ours / torch <=", "ratio_target", ".1f"),
]


def format_table(rows, columns=TABLE_COLUMNS):
    """A markdown table of rows; "-" for a missing value, "NaN" for NaN."""
    lines = [
        "| " + " | ".join(heading for heading, _, _ in columns) + " |",
        "| " + " | ".join("---" if spec == "s" else "---:" for _, _, spec in columns) + " |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(key), spec) for _, key, spec in columns) + " |")
    return "\n".join(lines) + "\n"


def graph_summary(rows, models, targets=GRAPH_RATIO_TARGETS):
    """Per model, the worst (largest) ours graph / torch graph over its batch
    sizes and whether it meets the model's target; a list of dicts (model,
    worst_ratio, worst_batch, measured, batch_sizes, target, meets), meets
    None where there is no target, no ratio, or the measured ratios meet the
    target but some batch sizes have none."""
    summary = []
    for model in models:
        model_rows = [row for row in rows if row["model"] == model]
        ratios = [(row["ours_graph_over_torch_graph"], row["batch"]) for row in model_rows
                  if row.get("ours_graph_over_torch_graph") is not None]
        worst_ratio, worst_batch = max(ratios) if ratios else (None, None)
        target = targets.get(model)
        meets = None
        if target is not None and worst_ratio is not None:
            if worst_ratio > target:
                meets = False
            elif len(ratios) == len(model_rows):
                meets = True
            # else: undecided, some batch sizes have no ratio.
        summary.append(dict(model=model, worst_ratio=worst_ratio, worst_batch=worst_batch,
                            measured=len(ratios), batch_sizes=len(model_rows),
                            target=target, meets=meets))
    return summary


def summary_lines(summary):
    """One line per model of graph_summary."""
    lines = []
    for s in summary:
        target = f"target <= {s['target']:.1f}" if s["target"] is not None else "no target"
        if s["worst_ratio"] is None:
            lines.append(f"{s['model']}: worst ours graph / torch graph: not measured ({target})")
            continue
        line = (f"{s['model']}: worst ours graph / torch graph = {s['worst_ratio']:.2f} "
                f"at B={s['worst_batch']}")
        if s["measured"] != s["batch_sizes"]:
            line += f" (of {s['measured']}/{s['batch_sizes']} batch sizes measured)"
        if s["target"] is None:
            line += f" ({target}; reported only)"
        elif s["meets"] is None:
            line += f" ({target}): undecided, not every batch size measured"
        elif s["meets"]:
            line += f" ({target}): meets target"
        else:
            line += f" ({target}): MISSES target"
        lines.append(line)
    return lines


def report_header(device_name, torch_version, allow_tf32, iters, warmup, tolerance, when):
    return (
        f"GraphServe CUDA graph replay and eager runtime vs PyTorch eager and PyTorch CUDA graphs: "
        f"{device_name}, torch {torch_version}, float32, TF32 {'on' if allow_tf32 else 'off'}, "
        f"MHA fast path off, torch.backends.cudnn.benchmark = True (PyTorch's fastest cuDNN "
        f"algorithms, autotuned in the warm-up runs); medians of {iters} runs after {warmup} "
        f"warm-up runs, "
        f"CUDA events, runs issued back to back; {when}.\n"
        f"target: ours graph / torch graph <= 0.8 on mlp, <= 1.0 on encoder "
        f"(dlrm_dense: reported, no target); speed is reported, not asserted.\n"
        f"ours graph = replay of our captured CUDA graph, inputs already on the device "
        f"(compute only); ours eager (compute) = EnqueueCompute; torch eager = module forward "
        f"on device-resident inputs; torch graph = g.replay() of the module captured with "
        f"torch.cuda.graph under inference_mode (static device inputs, "
        f"{TORCH_GRAPH_SIDE_STREAM_WARMUP} side-stream warm-up runs); capture ms = our "
        f"capture + post-process + instantiate + upload + validate for that batch size. "
        f"Rel err = ||out - ref|| / ||ref||, ref = the module in float64 on the GPU; "
        f"tolerance for ours {tolerance:g}. \"-\" = not measured (e.g. a binary without graphs).\n")


def cnn_report_header(allow_tf32, tf32_batch_sizes, tolerance):
    main = "on (--allow-tf32: no second pass)" if allow_tf32 else "off"
    tf32 = ",".join(str(b) for b in tf32_batch_sizes) if tf32_batch_sizes else "none"
    return (
        f"CNNs: our CUDA graph replay vs PyTorch's CUDA-graph replay (g.replay(), compute only, "
        f"inputs on the device), both float32; PyTorch with torch.backends.cudnn.benchmark = True "
        f"(its fastest cuDNN algorithms, autotuned before capture). Columns without TF32: TF32 "
        f"{main} on both sides (torch.backends.cuda.matmul.allow_tf32 = "
        f"torch.backends.cudnn.allow_tf32 = {allow_tf32}; ours {'with' if allow_tf32 else 'without'} "
        f"runtime_bench --allow-tf32). TF32 columns (batch sizes {tf32}): both of those PyTorch "
        f"switches True, ours with runtime_bench --allow-tf32. Rel err = ||out - ref|| / ||ref||, "
        f"ref = the module in float64 on the GPU; ours must be <= {tolerance:g} without TF32 "
        f"(asserted); TF32 errors are reported only (NaN fails). Target ours / torch <= 1.0 at "
        f"B=1 and B=8, TF32 off and on: reported, not asserted.\n")


def render_report(rows, models, header, cnn_rows=(), cnn_header="", schedule_rows=(),
                  schedule_header=""):
    """The whole markdown report: header, graph table, per-model target
    summary, the eager details, then the CNN table and its target lines when
    there are CNN rows, and the multi-lane table and its summary lines when
    there are schedule rows. Returns (report, graph_summary, cnn_summary)."""
    summary = graph_summary(rows, models)
    report = (header + "\n" + format_table(rows) + "\n"
              + "\n".join(summary_lines(summary)) + "\n\n"
              + "Eager details (ours full = H2D + compute + D2H via Enqueue; "
                "ours graph full = H2D + graph launch + D2H):\n\n"
              + format_table(rows, EAGER_COLUMNS))
    cnn = cnn_summary(cnn_rows)
    if cnn_rows:
        report += ("\n" + cnn_header + "\n" + format_table(cnn_rows, CNN_COLUMNS) + "\n"
                   + "\n".join(cnn_summary_lines(cnn)) + "\n")
    if schedule_rows:
        table_rows = [dict(row, bit_identical="NO: " + ", ".join(row["not_bit_identical"])
                           if row["not_bit_identical"] else "yes") for row in schedule_rows]
        report += ("\n" + schedule_header + "\n"
                   + format_table(table_rows, schedule_columns(schedule_rows)) + "\n"
                   + "\n".join(schedule_summary_lines(schedule_rows)) + "\n")
    return report, summary, cnn


def failures(rows, tolerance, cnn_rows=(), schedule_rows=()):
    """Rows whose relative error of ours fails: eager always, graph where
    measured (None: the binary wrote no graph outputs). NaN fails. In the
    CNN rows' TF32 pass (None: not run) only NaN fails. A schedule row fails
    for each policy whose replay is not bit-identical to the single-lane
    eager run."""
    bad = []
    for row in rows:
        err = row["rel_err_ours"]
        if err is None or not err <= tolerance:
            bad.append(f"{row['model']} B={row['batch']}: rel err ours eager {fmt(err, '.2e')}")
        err = row["rel_err_ours_graph"]
        if err is not None and not err <= tolerance:
            bad.append(f"{row['model']} B={row['batch']}: rel err ours graph {fmt(err, '.2e')}")
    for row in cnn_rows:
        for key, what in (("rel_err_ours_tf32", "eager"), ("rel_err_ours_graph_tf32", "graph")):
            err = row.get(key)
            if err is not None and math.isnan(err):
                bad.append(f"{row['model']} B={row['batch']}: rel err ours {what} with TF32 "
                           f"is NaN (or the output is missing)")
    for row in schedule_rows:
        for policy in row["not_bit_identical"]:
            bad.append(f"{row['model']} B={row['batch']}: the {policy} schedule's replay is NOT "
                       f"BIT-IDENTICAL to the single-lane eager run")
    return bad


def json_safe(row):
    """NaN and infinity as null: JSON has neither."""
    return {key: None if isinstance(value, float) and not math.isfinite(value) else value
            for key, value in row.items()}


def time_torch_graph_tf32(model32, inputs32, refs, args, name, batch):
    """The TF32 pass's PyTorch side of one CNN batch size: graph replay with
    both TF32 switches on; returns dict(torch_graph_us_tf32,
    rel_err_torch_graph_tf32), empty if capture or replay failed (PyTorch is
    the baseline, not under test: reported, not fatal)."""
    set_tf32(True)
    try:
        graph = time_torch_graph(model32, inputs32, args.warmup, args.iters)
    except Exception:
        traceback.print_exc()
        print(f"torch graph capture/replay of {name} B={batch} with TF32 failed", flush=True)
        return {}
    finally:
        set_tf32(args.allow_tf32)
    result = dict(torch_graph_us_tf32=graph["torch_graph_us"],
                  rel_err_torch_graph_tf32=rel_err(graph["outs"], refs))
    print(f"torch graph TF32 {name} B={batch}: {graph['torch_graph_us']:.1f} us "
          f"(min {graph['torch_graph_min_us']:.1f}, max {graph['torch_graph_max_us']:.1f}), "
          f"rel err {result['rel_err_torch_graph_tf32']:.2e}", flush=True)
    return result


def model_path(args, name):
    """The model's ONNX file: from --models-dir, or exported into <out>/models;
    None (after printing why) when neither works."""
    if args.models_dir:
        path = os.path.join(args.models_dir, f"{name}.onnx")
        if os.path.exists(path):
            return os.path.abspath(path)
        print(f"{path} does not exist; exporting {name} instead", flush=True)
    try:
        return os.path.abspath(
            export_models.export_all(os.path.join(args.out, "models"), [name])[name])
    except Exception:  # report, then go on with the other models
        traceback.print_exc()
        print(f"export of {name} failed", flush=True)
        return None


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    set_tf32(args.allow_tf32)
    # PyTorch at its best: cuDNN autotunes each shape (in the warm-up runs,
    # before any capture) and keeps the fastest algorithm.
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, python {platform.python_version()}, "
          f"TF32 {'on' if args.allow_tf32 else 'off'}, cudnn.benchmark on", flush=True)
    env = binary_env(args)
    try:
        help_text = subprocess.run([os.path.abspath(args.bin), "--help"], env=env,
                                   capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as error:
        print(f"runtime_bench --help failed: {error!r}", flush=True)
        help_text = ""
    args.bin_flags = help_flags(help_text)
    flag = graph_outputs_flag(args.bin_flags)
    print(f"runtime_bench graph outputs: "
          f"{'--' + flag if flag else 'no flag (the binary chooses the folder)'}; "
          f"looked for under {os.path.join(args.out, OURS_GRAPH_OUTPUTS)}/<model>/<B>/", flush=True)
    if "allow-tf32" not in args.bin_flags:
        print("note: runtime_bench --help lists no --allow-tf32; the TF32 pass passes it anyway",
              flush=True)
    if args.schedules != ["single"] and "schedules" not in args.bin_flags:
        print("note: runtime_bench --help lists no --schedules; passing it anyway", flush=True)

    # The CNNs' second pass, TF32 on for both sides (none when the whole run
    # is TF32 already).
    tf32_sizes = ([] if args.allow_tf32 else
                  [b for b in args.batch_sizes if b in args.tf32_batch_sizes])
    ignored = [b for b in args.tf32_batch_sizes if b not in args.batch_sizes]
    if ignored and any(m in export_models.CNN_NAMES for m in args.models):
        print(f"note: --tf32-batch-sizes {ignored} not in --batch-sizes: no TF32 pass there",
              flush=True)

    rows = []
    cnn_rows = []
    schedule_rows = []
    failed = False
    for name in args.models:
        onnx_path = model_path(args, name)
        spec = export_models.SPECS[name]
        is_cnn = name in export_models.CNN_NAMES
        model32 = spec.build().to(device)
        model64 = spec.build().double().to(device)
        torch_results = {}
        for batch in args.batch_sizes:
            inputs = make_inputs(spec, batch, args.seed)
            batch_dir = os.path.join(args.out, "inputs", name, str(batch))
            os.makedirs(batch_dir, exist_ok=True)
            for (input_name, _), array in zip(spec.inputs, inputs):
                np.save(os.path.join(batch_dir, f"{input_name}.npy"), array)

            inputs32 = [torch.from_numpy(a).to(device) for a in inputs]
            inputs64 = [t.double() for t in inputs32]
            refs = run_module(model64, inputs64)
            del inputs64
            torch32 = run_module(model32, inputs32)
            median, fastest, slowest = time_torch(model32, inputs32, args.warmup, args.iters)
            result = dict(torch_us=median, torch_min_us=fastest, torch_max_us=slowest,
                          rel_err_torch=rel_err(torch32, refs), refs=refs)
            print(f"torch {name} B={batch}: {median:.1f} us (min {fastest:.1f}, max {slowest:.1f}), "
                  f"rel err {result['rel_err_torch']:.2e}", flush=True)
            try:
                graph = time_torch_graph(model32, inputs32, args.warmup, args.iters)
                result.update(torch_graph_us=graph["torch_graph_us"],
                              torch_graph_min_us=graph["torch_graph_min_us"],
                              torch_graph_max_us=graph["torch_graph_max_us"],
                              torch_graph_capture_ms=graph["torch_graph_capture_ms"],
                              rel_err_torch_graph=rel_err(graph["outs"], refs))
                print(f"torch graph {name} B={batch}: {graph['torch_graph_us']:.1f} us "
                      f"(min {graph['torch_graph_min_us']:.1f}, max {graph['torch_graph_max_us']:.1f}), "
                      f"capture {graph['torch_graph_capture_ms']:.1f} ms, "
                      f"rel err {result['rel_err_torch_graph']:.2e}", flush=True)
            except Exception:  # PyTorch's graph is the baseline, not under test: report, go on
                traceback.print_exc()
                print(f"torch graph capture/replay of {name} B={batch} failed", flush=True)
            if is_cnn and batch in tf32_sizes:
                result.update(time_torch_graph_tf32(model32, inputs32, refs, args, name, batch))
            torch_results[batch] = result
            del inputs32
            torch.cuda.empty_cache()
        del model32, model64
        torch.cuda.empty_cache()

        ours, ran = (run_ours(args, onnx_path, name, env, args.batch_sizes, args.allow_tf32,
                              schedules=args.schedules)
                     if onnx_path else (None, False))
        if not ran:
            failed = True
        if not has_graph_outputs(args.out, name):
            print(f"{name}: no graph outputs under {os.path.join(args.out, OURS_GRAPH_OUTPUTS, name)} "
                  f"(an older binary?): rel err ours graph not checked", flush=True)
        ours_tf32 = None
        if is_cnn and tf32_sizes:
            ours_tf32, ran = (run_ours(args, onnx_path, name, env, tf32_sizes, True, TF32_SUFFIX)
                              if onnx_path else (None, False))
            if not ran:
                failed = True
        for batch in args.batch_sizes:
            result = torch_results[batch]
            record = (ours or {}).get(batch)
            err_ours, err_ours_graph = our_errors(args, spec, batch, result["refs"], record)
            row = make_row(name, batch, record, result, err_ours, err_ours_graph)
            if row["ours_graph_rel_err_vs_eager"] not in (None, 0, 0.0):
                print(f"note: {name} B={batch}: our graph replay differs from our eager run "
                      f"(rel err {row['ours_graph_rel_err_vs_eager']:.2e}; expected 0)", flush=True)
            rows.append(row)
            schedule_row = make_schedule_row(row, record)
            if schedule_row is not None:
                schedule_rows.append(schedule_row)
            if not is_cnn:
                continue
            tf32_record = err_tf32 = err_graph_tf32 = None
            if batch in tf32_sizes:
                tf32_record = (ours_tf32 or {}).get(batch)
                err_tf32, err_graph_tf32 = our_errors(args, spec, batch, result["refs"],
                                                      tf32_record, TF32_SUFFIX)
            cnn_rows.append(make_cnn_row(row, result, tf32_record, err_tf32, err_graph_tf32))

    header = report_header(torch.cuda.get_device_name(0), torch.__version__, args.allow_tf32,
                           args.iters, args.warmup, args.tolerance,
                           time.strftime('%Y-%m-%d %H:%M:%S'))
    report, summary, cnn = render_report(
        rows, args.models, header, cnn_rows,
        cnn_report_header(args.allow_tf32, tf32_sizes, args.tolerance),
        schedule_rows, schedule_report_header(args.schedules))
    print()
    print(report, flush=True)
    with open(os.path.join(args.out, "runtime_bench.md"), "w") as f:
        f.write(report)
    with open(os.path.join(args.out, "runtime_bench.json"), "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                       allow_tf32=args.allow_tf32, cudnn_benchmark=True,
                       warmup=args.warmup, iters=args.iters,
                       tolerance=args.tolerance, graph_ratio_targets=GRAPH_RATIO_TARGETS,
                       graph_summary=[json_safe(s) for s in summary],
                       rows=[json_safe(row) for row in rows],
                       tf32_batch_sizes=tf32_sizes,
                       cnn_ratio_targets=CNN_RATIO_TARGETS,
                       cnn_summary=[json_safe(s) for s in cnn],
                       cnn_rows=[json_safe(row) for row in cnn_rows],
                       schedules=args.schedules, auto_slower_limit=AUTO_SLOWER_LIMIT,
                       schedule_rows=[json_safe(row) for row in schedule_rows]),
                  f, indent=1)
    bad = failures(rows, args.tolerance, cnn_rows, schedule_rows)
    if failed or bad:
        for line in bad:
            print(f"FAILED: {line}", flush=True)
        print(f"FAILED: a model did not run, or a relative error of ours (eager, or graph where "
              f"the binary wrote graph outputs) exceeds {args.tolerance:g} or is NaN, or a "
              f"schedule's replay is not bit-identical to the single-lane eager run "
              f"(see the tables)", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
