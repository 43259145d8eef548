#!/usr/bin/env python3
"""GraphServe's eager runtime against PyTorch eager, on the GPU.

For each model of bench/export_models.py and each batch size B:
  1. draw seeded normal inputs and save them as <out>/inputs/<model>/<B>/<name>.npy;
  2. time PyTorch eager (float32, TF32 off, MHA fast path off) with CUDA events:
     warm-up, then the median of many runs issued back to back;
  3. compute a float64 reference (the same module in float64, on the GPU);
then run //bench:runtime_bench on the exported model for all batch sizes,
which writes its outputs to <out>/outputs/<model>/<B>/ and its timings to
<out>/ours_<model>.json, and compare: relative error ||out - ref|| / ||ref||
for our outputs and PyTorch's float32 outputs.

Prints a markdown table and writes it to <out>/runtime_bench.md, with all
numbers in <out>/runtime_bench.json. Exits 1 when any of our relative errors
exceeds --tolerance or is NaN, or when the binary fails, after printing
everything; 0 otherwise.

Usage (on the GPU machine):
  python3 bench/run_runtime_bench.py --bin out/runtime_bench/runtime_bench --out $OUT/bench
Shared libraries in <dir of --bin>/lib (bench/bundle_runtime_bench.sh puts
them there) are put on the binary's LD_LIBRARY_PATH.
"""

import argparse
import glob
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402  (beside this file)

DEFAULT_BATCH_SIZES = "1,2,4,8,16,32,64,128,256,512,1024,2048"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="path to the runtime_bench binary")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--batch-sizes", default=DEFAULT_BATCH_SIZES)
    parser.add_argument("--models", default=",".join(export_models.MODEL_NAMES))
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
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in export_models.SPECS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: {list(export_models.SPECS)}")
    if args.iters < 1 or args.warmup < 0:
        parser.error("need --iters >= 1 and --warmup >= 0")
    return args


def set_tf32(allowed):
    torch.backends.cuda.matmul.allow_tf32 = allowed
    torch.backends.cudnn.allow_tf32 = allowed


def make_inputs(spec, batch, seed):
    """Seeded normal float32 inputs, one array per model input, C order."""
    rng = np.random.default_rng([seed, batch, export_models.MODEL_NAMES.index(spec.name)])
    return [np.ascontiguousarray(rng.standard_normal((batch, *shape), dtype=np.float32))
            for _, shape in spec.inputs]


def time_torch(model, inputs, warmup, iters):
    """Median, min and max microseconds of model(*inputs), each run between two
    CUDA events, runs issued back to back and synchronised once at the end
    (as runtime_bench times ours)."""
    with torch.inference_mode():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for start, end in zip(starts, ends):
            start.record()
            model(*inputs)
            end.record()
        torch.cuda.synchronize()
    micros = sorted(1000.0 * start.elapsed_time(end) for start, end in zip(starts, ends))
    return float(np.median(micros)), micros[0], micros[-1]


def run_module(model, inputs):
    with torch.inference_mode():
        out = model(*inputs)
        torch.cuda.synchronize()
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().double().cpu().numpy() for o in outs]


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


def run_ours(args, onnx_path, name):
    """Runs the binary on one model; returns ({batch: record} or None, success)."""
    json_path = os.path.join(args.out, f"ours_{name}.json")
    command = [
        os.path.abspath(args.bin),
        "--model", onnx_path,
        "--batch-sizes", ",".join(str(b) for b in args.batch_sizes),
        "--inputs", os.path.join(args.out, "inputs", name),
        "--outputs", os.path.join(args.out, "outputs", name),
        "--warmup", str(args.warmup),
        "--iters", str(args.iters),
        "--json", json_path,
    ]
    if args.allow_tf32:
        command.append("--allow-tf32")
    print("+ " + " ".join(command), flush=True)
    if os.path.exists(json_path):
        os.remove(json_path)
    result = subprocess.run(command, env=binary_env(args))
    records = None
    # On failure the binary still writes the batch sizes it finished.
    if os.path.exists(json_path):
        with open(json_path) as f:
            records = {record["batch"]: record for record in json.load(f)}
    if result.returncode != 0:
        print(f"runtime_bench failed on {name} with exit code {result.returncode}", flush=True)
    return records, result.returncode == 0


def load_ours(args, spec, batch):
    outs = []
    for out_name in spec.output_names:
        path = os.path.join(args.out, "outputs", spec.name, str(batch), f"{out_name}.npy")
        if not os.path.exists(path):
            return None
        outs.append(np.load(path).astype(np.float64))
    return outs


def json_safe(row):
    """NaN and infinity as null: JSON has neither."""
    return {key: None if isinstance(value, float) and not math.isfinite(value) else value
            for key, value in row.items()}


def fmt(value, spec):
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return format(value, spec)


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    set_tf32(args.allow_tf32)
    device = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, python {platform.python_version()}, "
          f"TF32 {'on' if args.allow_tf32 else 'off'}", flush=True)

    rows = []
    failed = False
    for name in args.models:
        try:
            onnx_path = export_models.export_all(os.path.join(args.out, "models"), [name])[name]
        except Exception:  # report, then go on with the other models
            traceback.print_exc()
            print(f"export of {name} failed", flush=True)
            onnx_path = None
        spec = export_models.SPECS[name]
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
            torch32 = run_module(model32, inputs32)
            median, fastest, slowest = time_torch(model32, inputs32, args.warmup, args.iters)
            torch_results[batch] = dict(torch_us=median, torch_min_us=fastest, torch_max_us=slowest,
                                        rel_err_torch=rel_err(torch32, refs), refs=refs)
            print(f"torch {name} B={batch}: {median:.1f} us (min {fastest:.1f}, max {slowest:.1f}), "
                  f"rel err {torch_results[batch]['rel_err_torch']:.2e}", flush=True)
        del model32, model64
        torch.cuda.empty_cache()

        ours, ran = run_ours(args, os.path.abspath(onnx_path), name) if onnx_path else (None, False)
        if not ran:
            failed = True
        for batch in args.batch_sizes:
            result = torch_results[batch]
            record = (ours or {}).get(batch)
            outs = load_ours(args, spec, batch) if record is not None else None
            err_ours = rel_err(outs, result["refs"]) if outs is not None else math.nan
            if not err_ours <= args.tolerance:  # NaN fails too
                failed = True
            compute_us = record["eager_compute_us"] if record else None
            rows.append(dict(
                model=name, batch=batch,
                ours_full_us=record["eager_full_us"] if record else None,
                ours_compute_us=compute_us,
                ours_compute_min_us=record["compute_min_us"] if record else None,
                ours_compute_max_us=record["compute_max_us"] if record else None,
                torch_us=result["torch_us"],
                torch_min_us=result["torch_min_us"],
                torch_max_us=result["torch_max_us"],
                speedup=result["torch_us"] / compute_us if compute_us else None,
                rel_err_ours=err_ours,
                rel_err_torch=result["rel_err_torch"],
                fused_epilogues=record["fused_epilogues"] if record else None,
                arena_bytes=record["arena_bytes"] if record else None,
                arena_lower_bound_bytes=record["arena_lower_bound_bytes"] if record else None,
                rerun_max_abs_diff=record["rerun_max_abs_diff"] if record else None,
            ))

    header = (f"GraphServe eager runtime vs PyTorch eager: {torch.cuda.get_device_name(0)}, "
              f"torch {torch.__version__}, float32, TF32 {'on' if args.allow_tf32 else 'off'}, "
              f"MHA fast path off; medians of {args.iters} runs after {args.warmup} warm-up runs, "
              f"CUDA events, runs issued back to back; {time.strftime('%Y-%m-%d %H:%M:%S')}.\n"
              f"ours full = H2D + compute + D2H (Enqueue); ours compute = EnqueueCompute; "
              f"torch = module forward on device-resident inputs. Rel err = ||out - ref|| / ||ref||, "
              f"ref = the module in float64 on the GPU; tolerance for ours {args.tolerance:g}.\n")
    lines = [
        "| model | B | ours eager us (full) | ours compute us | torch eager us "
        "| speedup (torch/ours compute) | rel err ours | rel err torch |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['model']} | {row['batch']} | {fmt(row['ours_full_us'], '.1f')} "
            f"| {fmt(row['ours_compute_us'], '.1f')} | {fmt(row['torch_us'], '.1f')} "
            f"| {fmt(row['speedup'], '.2f')} | {fmt(row['rel_err_ours'], '.2e')} "
            f"| {fmt(row['rel_err_torch'], '.2e')} |")
    table = header + "\n" + "\n".join(lines) + "\n"
    print()
    print(table, flush=True)
    with open(os.path.join(args.out, "runtime_bench.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.out, "runtime_bench.json"), "w") as f:
        json.dump(dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                       allow_tf32=args.allow_tf32, warmup=args.warmup, iters=args.iters,
                       tolerance=args.tolerance, rows=[json_safe(row) for row in rows]),
                  f, indent=1)
    if failed:
        print(f"FAILED: a model did not run, or a relative error of ours exceeds {args.tolerance:g} "
              f"or is NaN (see the table)", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
