#!/usr/bin/env python3
"""Calls a graphserve serving bench/export_models.py's mobilenet_v2 (on any
executor) with tritonclient and compares with PyTorch in float64: batch 1,
a batch the server pads (3 -> 4) and one it splits (6), and a NaN row that
must come back NaN while the other row stays finite. Needs torch,
torchvision and tritonclient[grpc].

  python3 bench/host_serve_cnn_check.py --url localhost:8001
"""

import argparse
import os
import sys

import numpy as np
import torch
import tritonclient.grpc as grpcclient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402


def infer(client, model, x):
    request = grpcclient.InferInput("x", list(x.shape), "FP32")
    request.set_data_from_numpy(x)
    return client.infer(model, [request]).as_numpy("y")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="localhost:8001")
    parser.add_argument("--model", default="mobilenet_v2")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    spec = export_models.SPECS[args.model]
    module = spec.build().double()
    client = grpcclient.InferenceServerClient(args.url)
    failed = False
    for batch in (1, 3, 6):
        x = spec.example_inputs(batch)[0]
        got = infer(client, args.model, x.numpy())
        with torch.no_grad():
            want = module(x.double()).numpy()
        error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
        failed |= not error <= args.tolerance
        print(f"served {args.model} batch {batch}: rel err vs torch float64 {error:.3e}")
    x = spec.example_inputs(2)[0].numpy().copy()
    x[1, 0, 5, 5] = np.nan
    got = infer(client, args.model, x)
    nan_row, clean_row = bool(np.isnan(got[1]).all()), bool(np.isfinite(got[0]).all())
    failed |= not (nan_row and clean_row)
    print(f"NaN row -> all NaN: {nan_row} ; clean row finite: {clean_row}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
