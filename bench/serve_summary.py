#!/usr/bin/env python3
"""Issue 13's served targets from serve_bench.sh's CSV files, one table each.

    serve_summary.py OUT_DIR

Reads, from OUT_DIR (graphserve-client perf's perf_analyzer CSV, one row):
  latency_<model>_b<batch>_r<k>.csv   concurrency 1, repeat k
  sat_<server>_r<k>.csv               concurrency 64, batch 1, repeat k
  stream_<server>_r<k>.csv            the same over ModelStreamInfer streams
                                      (SERVE_STREAMING)
  conn64_<server>.csv                 the same over 64 connections (one run)
  variant_sat_<setting>_r<k>.csv      concurrency 64, batch 1, graphs on and
                                      batching, under one gRPC setting
  variant_c1_<setting>_<model>_b<batch>.csv   concurrency 1 under that setting
  variant_half_<setting>.csv          half that setting's saturated rate,
                                      constant
  half_<server>_<distribution>.csv    half the saturated request rate, at a
                                      constant rate or Poisson arrivals
  halfstream_<server>_<distribution>.csv   the same over streams, at half the
                                      streamed saturated rate (SERVE_STREAMING)
  shm_<mode>_b<batch>_r<k>.csv        mlp at concurrency 1, inputs through the
                                      message (none), system or CUDA shared memory
  gpu_busy.txt                        nvml_sampler.py report's lines, labelled
                                      <server> (served), stream_<server>
                                      (served over streams) or core_<server>
                                      (core_bench): GPU busy over the measured
                                      windows
  replay_<model>.json                 replay_bench's records (no gRPC)
  core_bench.txt                      core_bench's lines (no gRPC), one per
                                      server, each led by "<server>: "
where a saturated <server> is <config> for mlp and <model>_<config> for the
encoder (encoder_graphs_on_batching), <config> one of the four
graphs_{on,off}_{batching,no_batching}; each model gets its own saturation
section. The variant files come only with SERVE_SETTINGS=1; without them
their table is left out. Writes summary.md beside them. Every figure is the
median of its repeats with the spread (min-max). Exit status 0 whatever the
verdicts: the verdicts are the evidence, not a gate.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys


def read_row(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[0] if rows else {}


def column(row, *names):
    """The first column whose header contains one of `names` (in order)."""
    for name in names:
        for key, value in row.items():
            if key and name.lower() in key.lower() and value not in (None, ""):
                try:
                    return float(value)
                except ValueError:
                    pass
    return None


def median_spread(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


def fmt(value, digits=0):
    return "-" if value is None else f"{value:.{digits}f}"


def latency_table(out):
    runs = {}
    for path in glob.glob(os.path.join(out, "latency_*_b*_r*.csv")):
        m = re.match(r"latency_(.+)_b(\d+)_r(\d+)\.csv", os.path.basename(path))
        if m:
            runs.setdefault((m.group(1), int(m.group(2))), []).append(read_row(path))
    lines = ["## Served latency at concurrency 1 (us; median of repeats, [min-max])", "",
             "| model | batch | repeats | p50 | floor p50 | full-chunk replay | overhead "
             "(p50 - floor - replay) | target p50 <= floor + replay + 40 |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for (model, batch), rows in sorted(runs.items()):
        p50, lo, hi = median_spread([column(r, "p50 latency") for r in rows])
        floor, _, _ = median_spread([column(r, "Floor p50") for r in rows])
        replay, _, _ = median_spread([column(r, "replay") for r in rows])
        overhead = None if None in (p50, floor, replay) else p50 - floor - replay
        verdict = "-"
        if overhead is not None and batch <= 16:
            verdict = "met" if overhead <= 40 else "missed"
        lines.append(f"| {model} | {batch} | {len(rows)} | {fmt(p50)} [{fmt(lo)}-{fmt(hi)}] | "
                     f"{fmt(floor)} | {fmt(replay)} | {fmt(overhead)} | {verdict} |")
    return lines


def shared_memory_table(out):
    """4 KiB (batch 2) against 1 MiB (batch 512) requests, per input path."""
    runs = {}
    for path in glob.glob(os.path.join(out, "shm_*_b*_r*.csv")):
        m = re.match(r"shm_(.+)_b(\d+)_r(\d+)\.csv", os.path.basename(path))
        if m:
            runs.setdefault((m.group(1), int(m.group(2))), []).append(read_row(path))
    if not runs:
        return []
    lines = ["## Shared memory: mlp, 4 KiB (batch 2) vs 1 MiB (batch 512) requests, "
             "concurrency 1 (us; median of repeats, [min-max])", "",
             "| input path | p50 at 4 KiB | p50 at 1 MiB | 1 MiB / 4 KiB | "
             "target (system shared memory) <= 1.2x | the same less each size's full-chunk "
             "replay |",
             "| --- | ---: | ---: | ---: | --- | ---: |"]
    for mode in ("none", "system", "cuda"):
        small = median_spread([column(r, "p50 latency") for r in runs.get((mode, 2), [])])
        large = median_spread([column(r, "p50 latency") for r in runs.get((mode, 512), [])])
        if small[0] is None or large[0] is None:
            lines.append(f"| {mode} | - | - | - | no data | - |")
            continue
        ratio = large[0] / small[0]
        # The model's own work grows with the rows (512 against 2); less the
        # replay, what is left is what moving the bytes costs.
        replays = [median_spread([column(r, "Full-chunk replay") for r in runs[(mode, batch)]])[0]
                   for batch in (2, 512)]
        beyond = "-"
        if None not in replays and small[0] > replays[0]:
            beyond = f"{(large[0] - replays[1]) / (small[0] - replays[0]):.2f}x"
        verdict = ("met" if ratio <= 1.2 else "missed") if mode == "system" else "-"
        lines.append(f"| {mode} | {fmt(small[0])} [{fmt(small[1])}-{fmt(small[2])}] | "
                     f"{fmt(large[0])} [{fmt(large[1])}-{fmt(large[2])}] | {ratio:.2f}x | "
                     f"{verdict} | {beyond} |")
    return lines + [""]


def replay_table(out):
    """Replay-only throughput: graphs off, graphs on, graphs on double-buffered."""
    lines = []
    for path in sorted(glob.glob(os.path.join(out, "replay_*.json"))):
        model = os.path.basename(path)[len("replay_"):-len(".json")]
        with open(path) as f:
            records = [r for r in json.load(f) if "replay_infer_per_s_graphs" in r]
        for r in records:
            single = r["replay_infer_per_s_graphs"]
            double = r.get("replay_infer_per_s_graphs_double_buffered")
            lines.append(f"| {model} | {r['batch']} | {r['streams']} | "
                         f"{fmt(r['replay_infer_per_s_eager'])} | {fmt(single)} | {fmt(double)} | "
                         f"{'-' if not double else f'{double / single:.2f}x'} |")
    if not lines:
        return []
    return ["## Replay-only throughput, no gRPC (infer/s; bench/replay_bench)", "",
            "| model | batch | streams | graphs off | graphs on | graphs on, double-buffered "
            "staging | double / single |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
            ] + lines + [""]


# The saturation workloads, in the order of their sections, and why each is
# measured.
SATURATION_MODELS = {
    "mlp": "The demo MLP (make_demo_repository): the gRPC transport, not the GPU, sets its "
           "throughput",
    "encoder": "The encoder (4 TransformerEncoderLayers, x [B,16,256], bench/export_models.py): "
               "a model where kernel launches matter",
}

# The four saturated servers' configs: graphs on or off, dynamic batching on
# or off. They hold underscores, so a server's model is told by what precedes
# the config, never by splitting the name.
CONFIG = r"graphs_(?:on|off)_(?:no_)?batching"


def server_prefix(model):
    """What leads `model`'s server names: nothing for mlp, whose files keep the
    names of the runs before the encoder's, else the model's name and "_"."""
    return "" if model == "mlp" else model + "_"


def server_config(model, server):
    """The config of the server named `server` if it is one of `model`'s,
    else None."""
    m = re.fullmatch(re.escape(server_prefix(model)) + f"({CONFIG})", server)
    return m.group(1) if m else None


def saturation_runs(out, model, kind="sat"):
    """`model`'s saturated CSV rows by config, one per repeat: served one call
    a request (kind "sat") or over streams ("stream")."""
    runs = {}
    for path in glob.glob(os.path.join(out, f"{kind}_*_r*.csv")):
        m = re.match(kind + r"_(.+)_r(\d+)\.csv", os.path.basename(path))
        config = server_config(model, m.group(1)) if m else None
        if config:
            runs.setdefault(config, []).append(read_row(path))
    return runs


def core_results(out, model):
    """`model`'s core_bench lines by config: (infer/s, rows per execution,
    p50 us, p99 us) as printed; None without core_bench.txt."""
    path = os.path.join(out, "core_bench.txt")
    if not os.path.exists(path):
        return None
    pattern = re.compile(r"^(\S+): .*?: ([0-9.]+) infer/s, .*\(([0-9.]+) rows per execution\), "
                         r"latency p50 ([0-9.]+) us p99 ([0-9.]+) us")
    results = {}
    with open(path) as f:
        for line in f:
            m = pattern.match(line.strip())
            config = server_config(model, m.group(1)) if m else None
            if config:
                results[config] = m.groups()[1:]
    return results


def saturation_table(out, model, configs, streams=False):
    throughput = {}
    how = ", over ModelStreamInfer streams (one a request in flight)" if streams else ""
    lines = [f"## Saturated, {model}{how}: batch-1 requests, 64 concurrent over 16 connections, "
             "M=4 (infer/s; median [min-max])",
             ""]
    if not streams:
        lines += [f"{SATURATION_MODELS[model]}.", ""]
    lines += ["| server | repeats | infer/s | p50 us | p99 us |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for name, rows in sorted(configs.items()):
        thr, lo, hi = median_spread([column(r, "Inferences/Second") for r in rows])
        p50, _, _ = median_spread([column(r, "p50 latency") for r in rows])
        p99, _, _ = median_spread([column(r, "p99 latency") for r in rows])
        throughput[name] = thr
        lines.append(f"| {name} | {len(rows)} | {fmt(thr)} [{fmt(lo)}-{fmt(hi)}] | {fmt(p50)} | "
                     f"{fmt(p99)} |")
    for path in [] if streams else sorted(glob.glob(os.path.join(out, "conn64_*.csv"))):
        name = server_config(model, os.path.basename(path)[len("conn64_"):-len(".csv")])
        if not name:
            continue
        row = read_row(path)
        lines.append(f"| {name}, 64 connections | 1 | {fmt(column(row, 'Inferences/Second'))} | "
                     f"{fmt(column(row, 'p50 latency'))} | {fmt(column(row, 'p99 latency'))} |")
    lines.append("")
    lines += ratio_lines(throughput, "over streams, " if streams else "")
    return lines


def streaming_table(out, model):
    """The saturated servers over streams, with each against itself one call a
    request in the same run; nothing without SERVE_STREAMING's files."""
    streamed = saturation_runs(out, model, "stream")
    if not streamed:
        return []
    lines = [""] + saturation_table(out, model, streamed, streams=True)
    unary = saturation_runs(out, model)
    lines.append("")
    for name, rows in sorted(streamed.items()):
        if name in unary:
            over_streams = median_spread([column(r, "Inferences/Second") for r in rows])[0]
            one_call = median_spread([column(r, "Inferences/Second") for r in unary[name]])[0]
            if over_streams and one_call:
                lines.append(f"- {name}: streams / one call a request = "
                             f"{over_streams / one_call:.2f}x")
    return lines


# Issue 13's saturation targets: (numerator, denominator, target, what).
SATURATION_TARGETS = [
    ("graphs_on_batching", "graphs_off_no_batching", 3.0,
     "dynamic batching against graphs off and no batching"),
    ("graphs_on_batching", "graphs_off_batching", 1.5, "graphs on against off, batching on both"),
]


def variants_table(out):
    """The graphs-on batching server under each gRPC setting: saturated, and
    the overhead at concurrency 1."""
    names = [re.match(r"variant_(?:sat|c1)_([^_]+)_", os.path.basename(p))
             for p in glob.glob(os.path.join(out, "variant_*.csv"))]
    labels = sorted({m.group(1) for m in names if m})
    if not labels:
        return []
    lines = ["## gRPC settings (graphs on; saturated: dynamic batching, M=4, median of 2 "
             "runs [min-max]; concurrency 1: no batching, M=2, one run; mutexcheck: the "
             "default with Abseil's deadlock detection on in server and load generator; spin50: "
             "idle workers and responders poll 50 us, the old default; yield, block: "
             "--gpu-wait yield, block; encoder-<wait>: the encoder's batching server under "
             "each --gpu-wait, mlp's otherwise)", "",
             "| setting | saturated infer/s | saturated p50 us | half load p50 / p99 us | "
             "mlp b1 overhead us | dlrm_dense b16 overhead us |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for label in labels:
        rows = [read_row(p) for p in glob.glob(os.path.join(out, f"variant_sat_{label}_r*.csv"))]
        thr, lo, hi = median_spread([column(r, "Inferences/Second") for r in rows])
        p50, _, _ = median_spread([column(r, "p50 latency") for r in rows])
        overheads = []
        for case in ("mlp_b1", "dlrm_dense_b16"):
            path = os.path.join(out, f"variant_c1_{label}_{case}.csv")
            overheads.append(column(read_row(path), "Served overhead")
                             if os.path.exists(path) else None)
        half_path = os.path.join(out, f"variant_half_{label}.csv")
        half = read_row(half_path) if os.path.exists(half_path) else None
        half_text = (f"{fmt(column(half, 'p50 latency'))} / {fmt(column(half, 'p99 latency'))}"
                     if half else "-")
        lines.append(f"| {label} | {fmt(thr)} [{fmt(lo)}-{fmt(hi)}] | {fmt(p50)} | {half_text} | "
                     f"{fmt(overheads[0])} | {fmt(overheads[1])} |")
    return lines


def ratio_lines(throughput, prefix):
    """One line per saturation target from `throughput` by server name."""
    lines = []
    for a, b, target, what in SATURATION_TARGETS:
        if throughput.get(a) and throughput.get(b):
            r = throughput[a] / throughput[b]
            lines.append(f"- {prefix}{what}: {a} / {b} = {r:.2f}x (target >= {target}x: "
                         f"{'met' if r >= target else 'missed'})")
        else:
            lines.append(f"- {prefix}{what}: not measured ({a} or {b} missing)")
    return lines


def core_table(model, results):
    """The serving core without gRPC: core_bench's lines, and the same ratios."""
    if results is None:
        return []
    lines = ["", f"## The serving core without gRPC, {model} (core_bench: batch-1 requests, 64 "
             "outstanding, M=4, in-process)", "",
             "| server | infer/s | rows per execution | p50 us | p99 us |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, (thr, rows, p50, p99) in results.items():
        lines.append(f"| {name} | {thr} | {rows} | {p50} | {p99} |")
    lines.append("")
    # The targets are for served numbers; these are the serving core's share.
    throughput = {name: float(values[0]) for name, values in results.items()}
    return lines + ratio_lines(throughput, "without gRPC, ")


def half_load_table(out, model, kind="half"):
    """p99 against p50 at half the saturated rate: one call a request (kind
    "half") or over streams ("halfstream", half the streamed rate)."""
    how = ", over ModelStreamInfer streams" if kind == "halfstream" else ""
    paths = sorted(glob.glob(os.path.join(out, f"{kind}_*.csv")))
    if kind != "half" and not paths:
        return []
    lines = ["", f"## Half the saturated request rate{how}, {model}", ""]
    for path in paths:
        m = re.match(kind + r"_(.+)_([a-z]+)\.csv", os.path.basename(path))
        config = server_config(model, m.group(1)) if m else None
        if not config:
            continue
        row = read_row(path)
        p50, p99 = column(row, "p50 latency"), column(row, "p99 latency")
        verdict = "-" if None in (p50, p99) else ("met" if p99 <= 2 * p50 else "missed")
        lines.append(f"- {config}_{m.group(2)}: {fmt(column(row, 'Inferences/Second'))} infer/s, "
                     f"p50 {fmt(p50)} us, p99 {fmt(p99)} us (target p99 <= 2 x p50: {verdict})")
    return lines


def gpu_busy_lines(out, model):
    """nvml_sampler.py's lines for `model`'s servers, served and in-process;
    the verdict reads the line's leading mean, the busy fraction over the
    measured windows (a line without one, no driver samples there, gets none)."""
    path = os.path.join(out, "gpu_busy.txt")
    lines = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                label = re.match(r"gpu_busy (?:core_|stream_)?(\S+):", line)
                if not label or not server_config(model, label.group(1)):
                    continue
                m = re.match(r"gpu_busy \S+: mean ([0-9.]+)%", line)
                verdict = "" if not m else (" (met)" if float(m.group(1)) >= 80 else " (missed)")
                lines.append(f"- {line.strip()}{verdict}")
    if not lines:
        return ["", f"GPU busy, {model}: not sampled"]
    return ["", f"## GPU busy, {model} (mean of NVML's driver samples over the measured "
            "windows, target >= 80% at saturation)", ""] + lines


def saturation_section(out, model):
    """Issue 13's saturation targets on one model: served, in-process, at half
    load, and the GPU's busy time through them; one line when the model was
    not measured (SERVE_ENCODER=0, or its export or capture failed)."""
    served, core = saturation_runs(out, model), core_results(out, model)
    if not served and not core:
        return [f"## Saturated, {model}: not measured (no sat_{server_prefix(model)}graphs_* "
                "files, no core_bench lines)"]
    return (saturation_table(out, model, served) + streaming_table(out, model) +
            core_table(model, core) + half_load_table(out, model) +
            half_load_table(out, model, "halfstream") + gpu_busy_lines(out, model))


def main():
    out = sys.argv[1]
    lines = ["# Served numbers (bench/serve_bench.sh)", ""]
    lines += latency_table(out) + [""] + shared_memory_table(out)
    lines += replay_table(out)
    for model in SATURATION_MODELS:
        lines += saturation_section(out, model) + [""]
    lines += variants_table(out)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
