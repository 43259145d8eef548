#!/usr/bin/env python3
"""The CNN step of bench/gpu_check.sh, on the GPU machine: export the four
torchvision CNNs, capture each with `graphserve-capture prepare`, and run
bench/run_runtime_bench.py on them; two result files.

  1. python3 bench/export_models.py --models <the four> --out WORK/models
  2. per model: BIN/graphserve-capture prepare --model WORK/models/<m>.onnx
       --out WORK/repo/<m> --streams 2 --batch-sizes 1,8,16,32
     (wall time measured here; capture time and memory from its
     capture_report.txt);
  3. python3 bench/run_runtime_bench.py --bin BIN/runtime_bench --out WORK/runtime
       --models-dir WORK/models --models <the four> --batch-sizes 1,3,8,32
       --tf32-batch-sizes 1,8,32 --warmup 10 --iters 100
     (relative error against float64 PyTorch at each size, graph replay
     against PyTorch's CUDA graphs TF32 off and on; see that script).

Writes OUT/cnn_bench.md (the commands and their exit status, a capture
table, runtime_bench.md's tables, each capture_report.txt or the failing
prepare's output) and OUT/cnn_bench.json (the same numbers: "steps",
"prepare", and "runtime", runtime_bench.json as written). Everything else
stays under WORK. Each command's output is also printed as it runs.

Exits 1 when any command fails (export, any prepare, or the runtime
benchmark, which fails on a relative error of ours over 1e-4 or NaN), after
writing both files; 0 otherwise. Needs no torch itself.

  python3 bench/cnn_bench.py --bin-dir /tmp/graphserve-gpu/bin --work /tmp/graphserve-gpu/cnn --out $OUT
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_parse  # noqa: E402  (beside this file)

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
# The first four of export_models.CNN_NAMES (googlenet, there for the
# multi-stream schedules, is left out), spelled out so that this script
# needs no torch.
CNN_NAMES = ("resnet50", "inception_v3", "mobilenet_v2", "efficientnet_b0")

PREPARE_COLUMNS = [
    # (heading, key of the prepare entry or its parsed report, format)
    ("model", "model", "s"),
    ("exit", "exit_code", "d"),
    ("wall s", "wall_s", ".1f"),
    ("graphs", "graphs", "d"),
    ("set-up ms", "setup_ms", ".1f"),
    ("capture ms", "capture_ms", ".1f"),
    ("checks ms", "check_ms", ".1f"),
    ("worst replay-vs-eager rel err", "worst_check_rel_err", ".2g"),
    ("weights MiB", "weights_mib", ".2f"),
    ("activations MiB, arena per slot", "activations_shared_mib", ".2f"),
    ("activations MiB, arena per graph", "activations_unshared_mib", ".2f"),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", required=True,
                        help="the unpacked bundle's bin/ (graphserve-capture, runtime_bench)")
    parser.add_argument("--work", required=True, help="scratch folder: models, repository, runs")
    parser.add_argument("--out", required=True, help="folder for cnn_bench.md and cnn_bench.json")
    parser.add_argument("--models", default=",".join(CNN_NAMES))
    parser.add_argument("--streams", default="2", help="prepare --streams")
    parser.add_argument("--prepare-batch-sizes", default="1,8,16,32", help="prepare --batch-sizes")
    parser.add_argument("--batch-sizes", default="1,3,8,32", help="runtime benchmark batch sizes")
    parser.add_argument("--tf32-batch-sizes", default="1,8,32",
                        help="runtime benchmark sizes timed again with TF32 on")
    parser.add_argument("--warmup", default="10", help="runtime benchmark warm-up runs")
    parser.add_argument("--iters", default="100", help="runtime benchmark timed runs")
    return parser.parse_args(argv)


def run_command(name, command, log_lines=None):
    """Runs command, printing its output as it comes; returns a step dict
    (name, command, exit_code, wall_s, output)."""
    print(f"+ {' '.join(command)}", flush=True)
    began = time.perf_counter()
    lines = []
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", env=dict(
                                       os.environ, PYTHONUNBUFFERED="1"))
        for line in process.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line)
        exit_code = process.wait()
    except OSError as error:
        lines.append(f"cannot run {command[0]}: {error}\n")
        print(lines[-1], end="", flush=True)
        exit_code = 127
    wall_s = time.perf_counter() - began
    print(f"+ {name}: exit {exit_code} after {wall_s:.1f} s", flush=True)
    return dict(name=name, command=command, exit_code=exit_code, wall_s=wall_s,
                output="".join(lines))


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(value, spec):
    if value is None:
        return "-"
    return format(value, spec)


def prepare_table(entries):
    """A markdown table of the prepare entries (model, exit_code, wall_s and
    the parsed report's numbers)."""
    lines = ["| " + " | ".join(h for h, _, _ in PREPARE_COLUMNS) + " |",
             "| " + " | ".join("---" if s == "s" else "---:" for _, _, s in PREPARE_COLUMNS) + " |"]
    for entry in entries:
        values = dict(entry, **(entry.get("report") or {}))
        lines.append("| " + " | ".join(fmt(values.get(k), s) for _, k, s in PREPARE_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def tail(text, lines=40):
    return "\n".join(text.rstrip("\n").splitlines()[-lines:]) + "\n"


def render_markdown(steps, prepare, runtime_md, args):
    """cnn_bench.md: commands, capture table, runtime tables, reports."""
    parts = [
        "# CNN check: export, graphserve-capture prepare, runtime benchmark\n\n",
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}; models {args.models}; prepare --streams "
        f"{args.streams} --batch-sizes {args.prepare_batch_sizes}; runtime benchmark batch sizes "
        f"{args.batch_sizes}, TF32 pass at {args.tf32_batch_sizes}.\n\n",
        "## Commands\n\n",
    ]
    for step in steps:
        parts.append(f"- `{' '.join(step['command'])}`: exit {step['exit_code']}, "
                     f"{step['wall_s']:.1f} s\n")
    parts.append("\n## graphserve-capture prepare\n\n"
                 "wall s = the whole prepare command (import, weights upload, capture, checks, "
                 "cost table, writing the entry); set-up ms = bind, plan, capture and check of "
                 "every graph; capture ms = capture, post-process, instantiate and upload summed "
                 "over the graphs. Memory per slot is in each report below.\n\n")
    parts.append(prepare_table(prepare))
    parts.append("\n## Runtime benchmark (bench/run_runtime_bench.py)\n\n")
    parts.append(runtime_md if runtime_md else "(no runtime_bench.md: see gpu_check.log)\n")
    parts.append("\n## Capture reports\n")
    for entry in prepare:
        parts.append(f"\n### {entry['model']}\n\n")
        if entry["report_text"] is not None:
            parts.append(entry["report_text"])
        else:
            parts.append("(no capture_report.txt; the end of prepare's output:)\n\n```\n"
                         + tail(entry["output"]) + "```\n")
    return "".join(parts)


def main(argv=None):
    args = parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    work = os.path.abspath(args.work)
    models_dir = os.path.join(work, "models")
    os.makedirs(work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    python = sys.executable or "python3"
    steps = []

    steps.append(run_command("export", [
        python, os.path.join(BENCH_DIR, "export_models.py"),
        "--models", ",".join(models), "--out", models_dir]))

    prepare = []
    capture = os.path.join(args.bin_dir, "graphserve-capture")
    for model in models:
        out_dir = os.path.join(work, "repo", model)
        step = run_command(f"prepare {model}", [
            capture, "prepare", "--model", os.path.join(models_dir, f"{model}.onnx"),
            "--out", out_dir, "--streams", args.streams,
            "--batch-sizes", args.prepare_batch_sizes])
        steps.append(step)
        report_text = (read_text(os.path.join(out_dir, "capture_report.txt"))
                       if step["exit_code"] == 0 else None)
        prepare.append(dict(model=model, exit_code=step["exit_code"], wall_s=step["wall_s"],
                            report=gpu_check_parse.parse_prepare_report(report_text or ""),
                            report_text=report_text, output=step["output"]))

    runtime_out = os.path.join(work, "runtime")
    steps.append(run_command("runtime benchmark", [
        python, os.path.join(BENCH_DIR, "run_runtime_bench.py"),
        "--bin", os.path.join(args.bin_dir, "runtime_bench"), "--out", runtime_out,
        "--models-dir", models_dir, "--models", ",".join(models),
        "--batch-sizes", args.batch_sizes, "--tf32-batch-sizes", args.tf32_batch_sizes,
        "--warmup", args.warmup, "--iters", args.iters]))

    runtime_md = read_text(os.path.join(runtime_out, "runtime_bench.md"))
    with open(os.path.join(args.out, "cnn_bench.md"), "w") as f:
        f.write(render_markdown(steps, prepare, runtime_md, args))
    with open(os.path.join(args.out, "cnn_bench.json"), "w") as f:
        json.dump(dict(
            steps=[{k: v for k, v in step.items() if k != "output"} for step in steps],
            prepare=[{k: v for k, v in entry.items() if k != "output"} for entry in prepare],
            runtime=read_json(os.path.join(runtime_out, "runtime_bench.json"))), f, indent=1)

    failed = [step["name"] for step in steps if step["exit_code"] != 0]
    if failed:
        print(f"cnn_bench: FAILED: {', '.join(failed)}", flush=True)
        return 1
    print("cnn_bench: all steps passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
