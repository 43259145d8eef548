#!/usr/bin/env python3
"""Does the driver stamp a utilisation sample with
its period's end? GPU idle 1.5 s, busy (torch matmuls) from t0 for 2 s, idle
1.5 s, recorded by nvml_sampler.py; prints each driver sample relative to t0
and t1. End-stamped: the first busy sample lies after t0, the last busy one
after t1 and within a period of it."""
import subprocess, sys, time, signal, os, csv
import torch
rec = subprocess.Popen([sys.executable, "bench/nvml_sampler.py", "record", "--samples", "/tmp/stamp.csv"])
a = torch.randn(4096, 4096, device="cuda"); torch.cuda.synchronize()
time.sleep(1.5)
t0 = time.monotonic() * 1e6
while time.monotonic() * 1e6 - t0 < 2e6:
    a = a @ a; a = a / a.norm(); torch.cuda.synchronize()
t1 = time.monotonic() * 1e6
time.sleep(1.5)
rec.send_signal(signal.SIGTERM); rec.wait()
print(f"busy from t0 to t1 = {(t1 - t0) / 1e3:.0f} ms")
for row in csv.DictReader(open("/tmp/stamp.csv")):
    if row["source"] == "driver":
        t = float(row["monotonic_us"])
        if t0 - 1e6 < t < t1 + 1e6:
            print(f"t-t0 {(t - t0) / 1e3:8.1f} ms  t-t1 {(t - t1) / 1e3:8.1f} ms  busy {row['busy_percent']}")
