#!/usr/bin/env python3
"""When a level's slow requests were sent: one stall, or slow throughout.

A p99 far above p50 can be a few stalls that hold every request sent during
them, or a queue that never drains. perf's percentiles cannot tell these
apart; its timeline (graphserve-client perf --timeline) can:

    timeline_report.py TIMELINE.csv [--series SAMPLER.csv] [--bin-ms 10]

For each level: its requests, p50, p99 and max; the slowest bins of
--bin-ms by send time; and the stalls, stretches of bins whose median
latency is over 4x the level's p50 (and over 1 ms), with the requests they
held and their share of the level. With the series of
bench/thread_sampler.py from the same run (both on CLOCK_MONOTONIC), each
stall and the whole level also show the machine's runnable threads and each
sampled process's CPU and run-queue wait per bin: whether the threads were
busy, idle, or waiting for a core.
"""
import argparse
import csv
import statistics
import sys

STALL_FACTOR = 4
STALL_MIN_US = 1000


def read_timeline(path):
    """{level: [(sent_us, latency_us), ...]} of the successful requests."""
    levels = {}
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader, None)
        for row in reader:
            if len(row) == 4 and row[3] == "1":
                levels.setdefault(row[0], []).append((int(row[1]), int(row[2])))
    return levels


def read_series(path):
    """The sampler's rows as dicts of ints, and its process labels."""
    with open(path, newline="") as f:
        rows = [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]
    labels = [key[: -len("_cpu_us")] for key in (rows[0] if rows else {}) if key.endswith("_cpu_us")]
    return rows, labels


def percentile(sorted_values, p):
    """perf's rank: the observed value at round(p/100 x (n-1)), halves up."""
    return sorted_values[int(p / 100 * (len(sorted_values) - 1) + 0.5)]


def bins(requests, bin_us):
    """{bin index: [latency_us, ...]} by send time from the first send."""
    start = min(sent for sent, _ in requests)
    by_bin = {}
    for sent, latency in requests:
        by_bin.setdefault((sent - start) // bin_us, []).append(latency)
    return start, by_bin


def stalls(by_bin, threshold_us):
    """Runs of consecutive bins whose median latency passes the threshold:
    [(first bin, last bin), ...]."""
    runs = []
    for index in sorted(by_bin):
        if statistics.median(by_bin[index]) <= threshold_us:
            continue
        if runs and runs[-1][1] == index - 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return [tuple(run) for run in runs]


def machine_line(series, labels, begin_us, end_us):
    """The sampler's view of [begin_us, end_us): mean runnable threads, and
    each process's CPU and run-queue wait in ms per 10 ms."""
    rows = [row for row in series if begin_us <= row["time_us"] < end_us]
    if not rows:
        return "no samples"
    span_10ms = max(1, (rows[-1]["time_us"] - rows[0]["time_us"]) / 10_000 + 1)
    parts = [f"runnable {statistics.mean(r['procs_running'] for r in rows):.1f}"]
    for label in labels:
        cpu = sum(r[f"{label}_cpu_us"] for r in rows) / 1000 / span_10ms
        wait = sum(r[f"{label}_wait_us"] for r in rows) / 1000 / span_10ms
        parts.append(f"{label} cpu {cpu:.1f} wait {wait:.1f} ms/10ms")
    return ", ".join(parts)


def report_level(level, requests, bin_us, series, labels):
    latencies = sorted(latency for _, latency in requests)
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    start, by_bin = bins(requests, bin_us)
    end = max(sent for sent, _ in requests)
    lines = [f"level {level}: {len(requests)} requests over {(end - start) / 1e6:.2f} s, "
             f"p50 {p50} us, p99 {p99} us, max {latencies[-1]} us"]
    if series:
        lines.append(f"  whole level: {machine_line(series, labels, start, end)}")
    lines.append(f"  slowest {bin_us // 1000} ms bins by send time (ms from the first send):")
    slowest = sorted(by_bin, key=lambda i: -max(by_bin[i]))[:5]
    for index in sorted(slowest):
        values = sorted(by_bin[index])
        lines.append(f"    +{index * bin_us / 1000:.0f} ms: {len(values)} sent, "
                     f"p50 {percentile(values, 50)} us, max {values[-1]} us")
    threshold = max(STALL_FACTOR * p50, STALL_MIN_US)
    runs = stalls(by_bin, threshold)
    held = sum(len(by_bin[i]) for first, last in runs for i in range(first, last + 1)
               if i in by_bin)
    lines.append(f"  stalls (bins with median latency over {threshold} us): {len(runs)}, holding "
                 f"{held} requests ({100 * held / len(requests):.1f}% of the level)")
    for first, last in runs[:10]:
        values = [v for i in range(first, last + 1) for v in by_bin.get(i, [])]
        line = (f"    +{first * bin_us / 1000:.0f} to +{(last + 1) * bin_us / 1000:.0f} ms: "
                f"{len(values)} requests, worst {max(values)} us")
        if series:
            # From a bin before the stall (what set it off) until the last of
            # its requests was answered.
            answered = max(sent + latency for sent, latency in requests
                           if first * bin_us <= sent - start < (last + 1) * bin_us)
            line += "; " + machine_line(series, labels, start + (first - 1) * bin_us, answered)
        lines.append(line)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("timeline")
    parser.add_argument("--series", help="bench/thread_sampler.py's --series CSV")
    parser.add_argument("--bin-ms", type=int, default=10)
    args = parser.parse_args()
    if args.bin_ms < 1:
        sys.exit("timeline_report: --bin-ms must be at least 1")
    levels = read_timeline(args.timeline)
    if not levels:
        sys.exit(f"timeline_report: no successful requests in {args.timeline}")
    series, labels = read_series(args.series) if args.series else ([], [])
    for level, requests in levels.items():
        print("\n".join(report_level(level, requests, args.bin_ms * 1000, series, labels)))


if __name__ == "__main__":
    main()
