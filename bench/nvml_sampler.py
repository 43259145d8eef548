#!/usr/bin/env python3
"""GPU busy time sampled through NVML at 100 Hz or more, until stopped.

nvidia-smi's -lms sampling tops out near 10 Hz and each sample is a separate
query; at saturation the server's busy fraction moves faster than that. This
reads NVML directly (ctypes, the driver's libnvidia-ml.so.1, no Python
package) in a loop and, on SIGTERM or SIGINT, prints one line:

  gpu_busy LABEL: mean 87.3% p10 80.0% over 512 samples at 102 Hz

    nvml_sampler.py --label "M=4 batching" --hz 200 [--device 0] [--out FILE]

Utilisation is NVML's: the percent of the driver's last sample period in
which a kernel ran, the figure Triton's nv_gpu_utilization exports. That
period (1/6 s to 1 s, by driver) is coarser than the polling, so the samples
repeat its value: the mean over a run is the busy fraction, but the
polling rate adds no time resolution, and p10 shows only how the driver's
periods varied.
"""
import argparse
import ctypes
import signal
import sys
import time


class Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", default="gpu")
    parser.add_argument("--hz", type=float, default=200.0)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--out", help="append the result line to this file as well")
    args = parser.parse_args()

    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        sys.exit("nvml_sampler: nvmlInit failed")
    handle = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByIndex_v2(args.device, ctypes.byref(handle)) != 0:
        sys.exit(f"nvml_sampler: no GPU {args.device}")

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    samples = []
    period = 1.0 / args.hz
    start = time.monotonic()
    next_at = start
    utilization = Utilization()
    while not stop:
        if nvml.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(utilization)) == 0:
            samples.append(utilization.gpu)
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))
    elapsed = time.monotonic() - start
    nvml.nvmlShutdown()

    if not samples:
        line = f"gpu_busy {args.label}: no samples"
    else:
        ordered = sorted(samples)
        mean = sum(samples) / len(samples)
        p10 = ordered[int(0.1 * (len(ordered) - 1))]
        line = (f"gpu_busy {args.label}: mean {mean:.1f}% p10 {p10:.1f}% over {len(samples)} "
                f"samples at {len(samples) / elapsed:.0f} Hz")
    print(line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
