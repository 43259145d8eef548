#!/usr/bin/env python3
"""Where processes' threads spent a run: on a CPU, or waiting for one.

Samples /proc/PID/task/TID/schedstat (nanoseconds on a CPU, nanoseconds
runnable but waiting on a run queue) of every thread of the named processes,
and /proc/stat's procs_running (threads runnable on the whole machine), until
SIGTERM or SIGINT:

    thread_sampler.py --pid server=1234 --pid perf=5678 [--hz 100]
        [--series FILE] [--out FILE]

--series writes one CSV row per sample, to line up with a request timeline
(graphserve-client perf --timeline; both use CLOCK_MONOTONIC):
  time_us,procs_running,<label>_cpu_us,<label>_wait_us,<label>_runnable,...
the CPU and run-queue wait of each process's threads since the previous
sample, and how many of them were runnable (state R) at the sample. On exit it prints, per process, its threads grouped by name (the
server names its own: gs-stream-N, gs-grpc-queue, gs-responder, ...):
CPU seconds and run-queue wait seconds, most CPU first. Wait that is large
beside CPU means more threads wanted to run than there were cores: the
machine, not the code, held them.

bench/timeline_report.py reads the series beside a timeline.
"""
import argparse
import collections
import os
import signal
import sys
import time


def read_schedstat(pid, tid):
    """(cpu_ns, wait_ns) of one thread, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            cpu, wait, _ = f.read().split()
        return int(cpu), int(wait)
    except (OSError, ValueError):
        return None


def is_runnable(pid, tid):
    """Whether a thread is on a CPU or waiting for one (state R)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            # The name, in parentheses, may hold spaces: the state follows it.
            return f.read().rpartition(")")[2].split()[0] == "R"
    except (OSError, IndexError):
        return False


def thread_name(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def procs_running():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_running"):
                return int(line.split()[1])
    return 0


class Process:
    """One sampled process: its threads' last readings and their totals."""

    def __init__(self, label, pid):
        self.label = label
        self.pid = pid
        self.last = {}  # tid -> (cpu_ns, wait_ns)
        self.names = {}  # tid -> name
        self.total = collections.defaultdict(lambda: [0, 0])  # name -> [cpu_ns, wait_ns]

    def sample(self, list_threads):
        """CPU and wait (ns) of the process's threads since the last sample."""
        if list_threads:
            try:
                for tid in os.listdir(f"/proc/{self.pid}/task"):
                    if tid not in self.names:
                        self.names[tid] = thread_name(self.pid, tid)
            except OSError:
                pass
        cpu = wait = runnable = 0
        for tid in list(self.names):
            runnable += is_runnable(self.pid, tid)
            reading = read_schedstat(self.pid, tid)
            if reading is None:
                del self.names[tid]
                self.last.pop(tid, None)
                continue
            before = self.last.get(tid)
            self.last[tid] = reading
            if before is None:
                continue  # first seen: nothing to compare with yet
            d_cpu, d_wait = reading[0] - before[0], reading[1] - before[1]
            cpu += d_cpu
            wait += d_wait
            totals = self.total[self.names[tid]]
            totals[0] += d_cpu
            totals[1] += d_wait
        return cpu, wait, runnable

    def report(self, seconds):
        lines = [f"{self.label} (pid {self.pid}) over {seconds:.2f} s: "
                 "threads by name, CPU s and run-queue wait s"]
        cpu_all = sum(t[0] for t in self.total.values()) / 1e9
        wait_all = sum(t[1] for t in self.total.values()) / 1e9
        lines.append(f"  {'all':24s} cpu {cpu_all:8.3f}  wait {wait_all:8.3f}")
        if cpu_all == 0 and seconds > 0.5:
            lines.append("  (schedstat read zero: this kernel keeps no scheduler statistics)")
        for name, (cpu, wait) in sorted(self.total.items(), key=lambda item: -item[1][0])[:12]:
            lines.append(f"  {name:24s} cpu {cpu / 1e9:8.3f}  wait {wait / 1e9:8.3f}")
        return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pid", action="append", required=True, help="LABEL=PID")
    parser.add_argument("--hz", type=float, default=100.0)
    parser.add_argument("--series", help="write the per-sample CSV here")
    parser.add_argument("--out", help="append the report here as well")
    args = parser.parse_args()
    if not args.hz > 0:
        sys.exit("thread_sampler: --hz must be positive")
    processes = []
    for spec in args.pid:
        label, _, pid = spec.partition("=")
        if not pid.isdigit():
            sys.exit(f"thread_sampler: --pid wants LABEL=PID, got '{spec[:40]}'")
        processes.append(Process(label, int(pid)))

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    rows = []
    period = 1.0 / args.hz
    start = time.monotonic()
    n = 0
    while not stop:
        now = time.monotonic()
        # Threads come and go (gRPC starts some under load): list them every
        # tenth sample, read the known ones every sample.
        row = [int(now * 1e6), procs_running()]
        for process in processes:
            cpu, wait, runnable = process.sample(list_threads=n % 10 == 0)
            row += [cpu // 1000, wait // 1000, runnable]
        if n > 0:
            rows.append(row)
        n += 1
        time.sleep(max(0.0, start + n * period - time.monotonic()))
    seconds = time.monotonic() - start

    if args.series:
        with open(args.series, "w") as f:
            header = ["time_us", "procs_running"]
            for process in processes:
                header += [f"{process.label}_cpu_us", f"{process.label}_wait_us",
                           f"{process.label}_runnable"]
            f.write(",".join(header) + "\n")
            for row in rows:
                f.write(",".join(str(v) for v in row) + "\n")
    lines = []
    for process in processes:
        lines += process.report(seconds)
    print("\n".join(lines))
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
