#!/usr/bin/env python3
"""The benchmark's torchvision CNNs (bench/export_models.py) on GraphServe's
host reference executor against PyTorch in float64, on the CPU: evidence for
the import, BatchNorm folding, binding and host kernels of the CNN ops where
no GPU is lent. Needs torch and torchvision; run from the repository root:

  bazel build -c opt //bench:host_run
  python3 bench/host_cnn_check.py --host-run bazel-bin/bench/host_run \
      --models resnet50,inception_v3,mobilenet_v2,efficientnet_b0 --batch-sizes 1,3

Prints one line per model and batch; exits 1 when a relative error exceeds
--tolerance or the binary fails.
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host-run", required=True, help="the //bench:host_run binary")
    parser.add_argument("--models", default="cnn")
    parser.add_argument("--batch-sizes", default="1,3")
    parser.add_argument("--work", default="/tmp/graphserve-host-cnn")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    failed = False
    for name in export_models.resolve_models(args.models):
        spec = export_models.SPECS[name]
        path = os.path.join(args.work, f"{name}.onnx")
        os.makedirs(args.work, exist_ok=True)
        if not os.path.exists(path):
            export_models.export(spec, path)
        model = spec.build().double()
        for batch in [int(b) for b in args.batch_sizes.split(",")]:
            run_dir = os.path.join(args.work, f"{name}_{batch}")
            os.makedirs(os.path.join(run_dir, "in"), exist_ok=True)
            os.makedirs(os.path.join(run_dir, "out"), exist_ok=True)
            inputs = spec.example_inputs(batch)
            for (input_name, _), tensor in zip(spec.inputs, inputs):
                np.save(os.path.join(run_dir, "in", f"{input_name}.npy"), tensor.numpy())
            start = time.time()
            result = subprocess.run([args.host_run, "--model", path, "--inputs",
                                     os.path.join(run_dir, "in"), "--outputs",
                                     os.path.join(run_dir, "out")],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                print(f"{name} batch {batch}: host_run failed: {result.stderr[-500:]}")
                failed = True
                continue
            with torch.no_grad():
                want = model(*[t.double() for t in inputs]).numpy()
            got = np.load(os.path.join(run_dir, "out", f"{spec.output_names[0]}.npy"))
            error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
            failed |= not error <= args.tolerance
            print(f"{name} batch {batch}: rel err vs PyTorch float64 {error:.3e} "
                  f"(host executor, {time.time() - start:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
