#!/usr/bin/env python3
"""Kernel-by-kernel time of one CUDA graph replay, ours beside PyTorch's, for
finding where a model's time goes (issue 28).

  kernel_profile.py torch --model bert --precision fp16 --batch 1 --out FILE.json
      PyTorch's CUDA graph of the model (as bench/model_zoo.py builds it),
      profiled with torch.profiler over REPLAYS replays; with --compile,
      torch.compile's (mode reduce-overhead: its own CUDA graphs) instead.
  kernel_profile.py ncu CSV --out FILE.json [--last N]
      Nsight Compute's CSV (--csv --metrics gpu__time_duration.sum) of a
      runtime_bench run; the last N kernels (one replay) are kept.

Both write [{"name", "us"}] in launch order and print a summary by kernel
family (the name up to its first '<' or '(').
"""
import argparse
import collections
import csv
import json
import sys


def family(name):
    for stop in "<(":
        name = name.split(stop)[0]
    return name.strip()[:90]


def summary(kernels, title):
    total = sum(k["us"] for k in kernels)
    by = collections.defaultdict(lambda: [0, 0.0])
    for k in kernels:
        by[family(k["name"])][0] += 1
        by[family(k["name"])][1] += k["us"]
    print(f"== {title}: {len(kernels)} kernels, {total:.1f} us of kernel time")
    for name, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{us:9.1f} us {100 * us / max(total, 1e-9):5.1f}% {n:4d}x  {name}")


def torch_profile(args):
    import torch
    sys.path.insert(0, "bench")
    import model_zoo
    spec = model_zoo.model_spec(args.model)
    dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16}[args.precision]
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    torch.manual_seed(0)
    model = model_zoo.wrap(spec["build"]().eval(), spec["kind"]).to(dtype).cuda()
    inputs = model_zoo.make_inputs(spec["kind"], args.batch, 1, dtype)
    if args.compile:
        compiled = torch.compile(model, mode="reduce-overhead")
        inputs = [t.cuda() for t in inputs]
        with torch.no_grad():
            for _ in range(5):  # compile, record, then replay
                compiled(*inputs)
        run = lambda: compiled(*inputs)  # noqa: E731
    else:
        graph = model_zoo.capture_torch_graph(model, inputs)
        run = graph.replay
    run()
    torch.cuda.synchronize()
    from torch.profiler import profile, ProfilerActivity
    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.replays):
            run()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    events.sort(key=lambda e: e.time_range.start)
    per = len(events) // args.replays
    kernels = [{"name": e.name, "us": e.time_range.elapsed_us()} for e in events[-per:]]
    return kernels


def ncu_profile(args):
    kernels = []
    with open(args.csv) as f:
        rows = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(rows):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        us = value / 1000 if unit in ("ns", "nsecond") else value if unit in ("us", "usecond") else value * 1000
        kernels.append({"name": row["Kernel Name"], "us": us})
    return kernels[-args.last:] if args.last else kernels


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("torch")
    t.add_argument("--model", default="bert")
    t.add_argument("--precision", default="fp16", choices=["fp32", "tf32", "fp16"])
    t.add_argument("--batch", type=int, default=1)
    t.add_argument("--replays", type=int, default=5)
    t.add_argument("--compile", action="store_true")
    n = sub.add_parser("ncu")
    n.add_argument("csv")
    n.add_argument("--last", type=int, default=0)
    for p in (t, n):
        p.add_argument("--out", required=True)
    args = parser.parse_args()
    kernels = torch_profile(args) if args.mode == "torch" else ncu_profile(args)
    with open(args.out, "w") as f:
        json.dump(kernels, f, indent=0)
    summary(kernels, f"{args.mode} {args.out}")


if __name__ == "__main__":
    main()
