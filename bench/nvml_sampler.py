#!/usr/bin/env python3
"""GPU busy time from NVML's own sample buffer, over the measured windows only.

    nvml_sampler.py record --samples FILE [--device 0] [--hz 100]
    nvml_sampler.py report --samples FILE --label LABEL [--timeline CSV]...
                           [--window START_US,END_US]... [--out FILE]

`record` runs until SIGTERM or SIGINT. NVML's utilisation is the percent of
the driver's sample period (1/6 s to 1 s, by product) in which a kernel ran.
Polling nvmlDeviceGetUtilizationRates only repeats the latest period's value,
whatever the rate, and says nothing of where that period began. The driver
also keeps a buffer of its periods, each stamped with the CPU time it ended
(nvmlDeviceGetSamples): read with the last timestamp seen, it gives every
period once, so a measured window can be cut at period boundaries instead of
averaging in the model loading, connection set-up and warm-up around it. On
the H100 machines a period is 200 ms, stamped on CLOCK_REALTIME at its end
(checked against a known busy edge: bench/results/2026-11-26_338f70b_final_h100/
nvml_stamp_probe.txt).
`record` reads that buffer (ctypes on the driver's libnvidia-ml.so.1, no
Python package) and, as a cross-check, polls the utilisation at --hz. It
writes FILE as CSV, one row per sample:

    monotonic_us,busy_percent,source      source: driver or polled

with the driver's timestamps moved onto CLOCK_MONOTONIC (time.monotonic(),
C++'s steady_clock on Linux, perf --timeline's clock). Which clock the driver
stamps with is not documented (wall time and time since boot are both seen):
the first recent sample is compared with CLOCK_REALTIME, CLOCK_MONOTONIC and
CLOCK_BOOTTIME, and one within 10 s is taken, or recording stops saying so. On
stop it waits briefly for the period that holds the stop, then prints the
driver's clock, its median period and the counts.

`report` prints, and appends to --out, one line (wrapped here):

    gpu_busy LABEL: mean 93.1% over 6.0 s measured (3 windows, 36 driver
      samples, every 167 ms); polled mean 92.4%; whole recording 71.0%

A window is a perf timeline's span (first send to last answer) or a --window
in CLOCK_MONOTONIC microseconds. Driver sample i holds the busy percent of
the period (t[i-1], t[i]]; the first sample's period has no known start and
is left out. The mean weighs each period by its overlap with the union of the
windows, so a window's edge splits a period rather than taking or dropping it
whole. After a gap in the buffer (the driver may stop sampling an idle GPU) a
sample covers one median period, not the gap. The polled mean takes the
polled samples inside the windows; the whole recording weighs every driver
period, idle time included, as the polled mean over a whole run used to.
"""
import argparse
import csv
import ctypes
import signal
import statistics
import sys
import time

NVML_SUCCESS = 0
NVML_ERROR_NOT_FOUND = 6  # no sample newer than lastSeenTimeStamp
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_GPU_UTILIZATION_SAMPLES = 1
NVML_VALUE_TYPE_UNSIGNED_INT = 1

DRIVER_READ_S = 0.25  # the buffer holds many periods; reading it often buys nothing
CLOCK_MATCH_US = 10_000_000  # the newest sample is this close to the driver's clock
STOP_WAIT_MAX_S = 2.0  # the longest wait after stop for the period holding it
# A driver period longer than this many median periods is a gap in the buffer
# (the driver may stop sampling an idle GPU): the sample after it is taken to
# cover one median period, and the rest of the gap none.
GAP_PERIODS = 2.0

HEADER = ["monotonic_us", "busy_percent", "source"]


class SamplerError(Exception):
    pass


# ---------------------------------------------------------------------------
# Window arithmetic (no NVML): times in CLOCK_MONOTONIC microseconds.


def read_samples(path):
    """(driver, polled): lists of (monotonic_us, percent) in time order."""
    driver, polled = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            sample = (int(row["monotonic_us"]), float(row["busy_percent"]))
            (driver if row["source"] == "driver" else polled).append(sample)
    return sorted(driver), sorted(polled)


def timeline_window(path):
    """[first send, last answer] of a perf --timeline CSV, or None if it has no rows."""
    start = end = None
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or header[1:3] != ["Sent us", "Latency us"]:
            raise SamplerError(f"{path} is not a perf timeline (header {header})")
        for row in reader:
            if len(row) < 3:
                continue
            sent, latency = int(row[1]), int(row[2])
            start = sent if start is None else min(start, sent)
            end = sent + latency if end is None else max(end, sent + latency)
    return None if start is None else (start, end)


def parse_window(text):
    """"START,END" in microseconds, START < END."""
    try:
        start, end = (int(part) for part in text.split(","))
    except ValueError:
        raise SamplerError(f"--window {text!r} is not START_US,END_US") from None
    if start >= end:
        raise SamplerError(f"--window {text!r} ends before it starts")
    return start, end


def merge(windows):
    """The union of windows as disjoint (start, end) pairs in order."""
    merged = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def overlap(begin, end, merged):
    """Microseconds of (begin, end] inside the merged windows."""
    return sum(max(0, min(end, w_end) - max(begin, w_start)) for w_start, w_end in merged)


def median_period(driver):
    """The driver's median sample period in microseconds; None under two samples."""
    gaps = [b[0] - a[0] for a, b in zip(driver, driver[1:])]
    return statistics.median(gaps) if gaps else None


def periods(driver):
    """(begin, end, percent) of each driver sample but the first, whose period
    has no known start; past a gap (GAP_PERIODS) a sample covers one median
    period."""
    typical = median_period(driver)
    spans = []
    for previous, (t, percent) in zip(driver, driver[1:]):
        begin = previous[0]
        if t - begin > GAP_PERIODS * typical:
            begin = t - typical
        spans.append((begin, t, percent))
    return spans


def weighted_mean(spans, merged=None):
    """(mean percent, microseconds covered, samples counted) of the spans
    weighed by their overlap with `merged`, or by their length without it;
    mean None when nothing overlaps."""
    total = weight = 0.0
    count = 0
    for begin, end, percent in spans:
        w = overlap(begin, end, merged) if merged is not None else end - begin
        if w > 0:
            total += w * percent
            weight += w
            count += 1
    return (total / weight if weight else None), weight, count


def polled_mean(polled, merged):
    """Mean of the polled samples inside the windows; None without any."""
    inside = [p for t, p in polled if any(start <= t <= end for start, end in merged)]
    return sum(inside) / len(inside) if inside else None


def plural(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"


def percent(value):
    return "-" if value is None else f"{value:.1f}%"


def report_line(label, driver, polled, windows):
    """The gpu_busy line for the samples over `windows` (before their union)."""
    merged = merge(windows)
    if not merged:
        return f"gpu_busy {label}: no measured windows"
    spans = periods(driver)
    mean, covered, count = weighted_mean(spans, merged)
    whole = weighted_mean(spans)[0]
    measured = sum(end - start for start, end in merged)
    window_text = plural(len(windows), "window")
    tail = f"polled mean {percent(polled_mean(polled, merged))}; whole recording {percent(whole)}"
    if mean is None:
        return (f"gpu_busy {label}: no driver samples in the measured windows "
                f"({measured / 1e6:.1f} s measured, {window_text}); {tail}")
    coverage = f", covering {covered / 1e6:.1f} s" if covered < measured else ""
    return (f"gpu_busy {label}: mean {mean:.1f}% over {measured / 1e6:.1f} s measured "
            f"({window_text}, {plural(count, 'driver sample')}, every "
            f"{median_period(driver) / 1000:.0f} ms{coverage}); {tail}")


# ---------------------------------------------------------------------------
# Recording through NVML.


def clocks_now_us():
    """The clocks the driver might stamp with, now, in microseconds."""
    return {"CLOCK_REALTIME": time.time() * 1e6,
            "CLOCK_MONOTONIC": time.monotonic() * 1e6,
            "CLOCK_BOOTTIME": time.clock_gettime(time.CLOCK_BOOTTIME) * 1e6}


def choose_clock(newest_us, now_us):
    """The clock of now_us ({name: microseconds}) nearest the driver's newest
    sample, which must lie within CLOCK_MATCH_US of it."""
    name = min(now_us, key=lambda clock: abs(now_us[clock] - newest_us))
    if abs(now_us[name] - newest_us) > CLOCK_MATCH_US:
        clocks = ", ".join(f"{clock} {value:.0f}" for clock, value in now_us.items())
        raise SamplerError(
            f"the driver's newest utilisation sample is stamped {newest_us} us, within "
            f"{CLOCK_MATCH_US / 1e6:.0f} s of none of this machine's clocks ({clocks} us): "
            "cannot place its samples on CLOCK_MONOTONIC")
    return name


class Value(ctypes.Union):  # nvmlValue_t
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint),
                ("ulVal", ctypes.c_ulong), ("ullVal", ctypes.c_ulonglong),
                ("sllVal", ctypes.c_longlong)]


class Sample(ctypes.Structure):  # nvmlSample_t
    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", Value)]


class Utilization(ctypes.Structure):  # nvmlUtilization_t
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class Nvml:
    """One GPU through libnvidia-ml.so.1."""

    def __init__(self, device):
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            raise SamplerError(f"no NVML on this machine ({e})") from None
        self.lib.nvmlDeviceGetSamples.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(Sample)]
        if self.lib.nvmlInit_v2() != NVML_SUCCESS:
            raise SamplerError("nvmlInit failed")
        self.handle = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(device, ctypes.byref(self.handle)) != 0:
            self.lib.nvmlShutdown()
            raise SamplerError(f"no GPU {device}")
        self.utilization = Utilization()

    def close(self):
        self.lib.nvmlShutdown()

    def polled(self):
        """The latest period's busy percent, or None when the query fails."""
        result = self.lib.nvmlDeviceGetUtilizationRates(self.handle,
                                                        ctypes.byref(self.utilization))
        return self.utilization.gpu if result == NVML_SUCCESS else None

    def driver_samples(self, last_seen):
        """[(driver timestamp us, percent)] newer than last_seen, in time order."""
        value_type, count = ctypes.c_int(), ctypes.c_uint()
        result = self.lib.nvmlDeviceGetSamples(self.handle, NVML_GPU_UTILIZATION_SAMPLES,
                                               last_seen, ctypes.byref(value_type),
                                               ctypes.byref(count), None)
        for _ in range(4):
            if result == NVML_ERROR_NOT_FOUND or (result == NVML_SUCCESS and count.value == 0):
                return []
            if result not in (NVML_SUCCESS, NVML_ERROR_INSUFFICIENT_SIZE):
                raise SamplerError(f"nvmlDeviceGetSamples failed with NVML error {result}")
            count = ctypes.c_uint(max(count.value, 16) * 2)  # new samples may arrive meanwhile
            buffer = (Sample * count.value)()
            result = self.lib.nvmlDeviceGetSamples(self.handle, NVML_GPU_UTILIZATION_SAMPLES,
                                                   last_seen, ctypes.byref(value_type),
                                                   ctypes.byref(count), buffer)
            if result == NVML_SUCCESS:
                break
        else:
            raise SamplerError(f"nvmlDeviceGetSamples kept failing (NVML error {result})")
        if value_type.value != NVML_VALUE_TYPE_UNSIGNED_INT:
            raise SamplerError(f"the driver's utilisation samples are of NVML value type "
                               f"{value_type.value}, not unsigned int "
                               f"({NVML_VALUE_TYPE_UNSIGNED_INT}): read them differently")
        samples = sorted((s.timeStamp, s.sampleValue.uiVal) for s in buffer[:count.value])
        for stamp, value in samples:
            if value > 100:
                raise SamplerError(f"the driver's utilisation sample at {stamp} us is {value}, "
                                   "over 100: not a percent")
        return [s for s in samples if s[0] > last_seen]


class Recorder:
    """Driver samples and polled values into the CSV, as they come."""

    def __init__(self, nvml, writer, start_us):
        self.nvml = nvml
        self.writer = writer
        self.start_us = start_us
        self.last_seen = 0
        self.clock = None
        self.offset_us = 0.0  # the driver's clock minus CLOCK_MONOTONIC
        self.driver = []  # monotonic microseconds of the driver samples kept
        self.polled = 0

    def poll(self):
        value = self.nvml.polled()
        if value is not None:
            self.writer.writerow([int(time.monotonic() * 1e6), value, "polled"])
            self.polled += 1

    def read_driver(self):
        samples = self.nvml.driver_samples(self.last_seen)
        if not samples:
            return
        if self.clock is None:
            now = clocks_now_us()
            try:
                self.clock = choose_clock(samples[-1][0], now)
            except SamplerError:
                if self.last_seen:
                    raise  # samples that came while recording match no clock
                # The driver may stop sampling an idle GPU, leaving only old
                # periods in its buffer: all before the recording. The clock
                # is told by the first period that comes.
                self.last_seen = samples[-1][0]
                return
            self.offset_us = now[self.clock] - now["CLOCK_MONOTONIC"]
            # The first read returns the whole buffer: keep what falls in the
            # recording and the sample before it, the start of the first period.
            before = [s for s in samples if s[0] - self.offset_us < self.start_us]
            samples = before[-1:] + samples[len(before):]
        self.last_seen = samples[-1][0]
        for stamp, value in samples:
            self.driver.append(round(stamp - self.offset_us))
            self.writer.writerow([self.driver[-1], value, "driver"])

    def finish(self, stop_us):
        """Waits, briefly, for the driver's period holding stop_us."""
        typical = median_period([(t, 0) for t in self.driver]) or 0
        deadline = time.monotonic() + min(STOP_WAIT_MAX_S, max(0.5, 3 * typical / 1e6))
        while (not self.driver or self.driver[-1] < stop_us) and time.monotonic() < deadline:
            time.sleep(0.05)
            self.read_driver()

    def summary(self):
        typical = median_period([(t, 0) for t in self.driver])
        if typical is None:
            return (f"nvml_sampler: {len(self.driver)} driver samples (the driver's buffer "
                    f"stayed empty or nearly), {self.polled} polled samples")
        return (f"nvml_sampler: driver clock {self.clock}, median period "
                f"{typical / 1000:.1f} ms; {len(self.driver)} driver samples, "
                f"{self.polled} polled samples")


def record(args):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    nvml = Nvml(args.device)
    try:
        with open(args.samples, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(HEADER)
            start = time.monotonic()
            recorder = Recorder(nvml, writer, start * 1e6)
            period = 1.0 / args.hz
            next_poll = next_read = start
            while not stop:
                recorder.poll()
                if time.monotonic() >= next_read:
                    recorder.read_driver()
                    f.flush()
                    next_read += DRIVER_READ_S
                next_poll += period
                time.sleep(max(0.0, next_poll - time.monotonic()))
            recorder.finish(time.monotonic() * 1e6)
    finally:
        nvml.close()
    print(recorder.summary(), flush=True)
    return 0 if len(recorder.driver) >= 2 else 1


def report(args):
    windows = [parse_window(text) for text in args.window]
    for path in args.timeline:
        try:
            window = timeline_window(path)
        except FileNotFoundError:
            window = None
        if window is None:
            print(f"nvml_sampler: no requests in {path}; its window is left out",
                  file=sys.stderr)
        else:
            windows.append(window)
    try:
        driver, polled = read_samples(args.samples)
    except FileNotFoundError:
        line = f"gpu_busy {args.label}: no samples ({args.samples} was not written)"
    else:
        line = report_line(args.label, driver, polled, windows)
    print(line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    # A line without a busy figure is written, so the summary shows it, and
    # counted as a failure by the caller.
    return 0 if line.startswith(f"gpu_busy {args.label}: mean ") else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="record samples until SIGTERM or SIGINT")
    rec.add_argument("--samples", required=True, help="the CSV to write")
    rec.add_argument("--device", type=int, default=0)
    rec.add_argument("--hz", type=float, default=100.0, help="polling rate of the cross-check")
    rep = commands.add_parser("report", help="GPU busy over the measured windows")
    rep.add_argument("--samples", required=True, help="record's CSV")
    rep.add_argument("--label", required=True)
    rep.add_argument("--timeline", action="append", default=[],
                     help="a perf --timeline CSV: one window, first send to last answer")
    rep.add_argument("--window", action="append", default=[],
                     help="START_US,END_US on CLOCK_MONOTONIC")
    rep.add_argument("--out", help="append the line to this file as well")
    args = parser.parse_args()
    if args.command == "record" and args.hz <= 0:
        parser.error("--hz must be positive")
    try:
        return record(args) if args.command == "record" else report(args)
    except SamplerError as e:
        print(f"nvml_sampler: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
