#!/usr/bin/env python3
"""Checks a running GraphServe against the models of Triton's QA generators
(issue 27 part 7): every READY model version is sent random inputs of its
metadata's shapes and types through tritonclient, and its outputs are compared
with onnx's reference evaluator (onnx.reference.ReferenceEvaluator) on the
same inputs (a config's reshape applied). Prints how many answer right, which
answer wrong, and how many did not load.

Triton's generators (qa/common/gen_qa_*.py in Triton's server repository) are
not part of this repository: run them where onnx is installed, e.g.
  python3 gen_qa_models.py --onnx [--onnx_opset 25] --models_dir REPO
then serve REPO (graphserve --model-repository REPO --exit-on-error=false) and
  python3 bench/triton_qa_check.py REPO localhost:8001 [localhost:8000]
With the HTTP/REST address too, every model is also asked over HTTP, with
JSON and with binary data, and must answer right on every transport.
BYTES inputs are sent as the text of small integers (numpy "object"
arrays of str, as Triton's QA clients send them) and BYTES outputs compared
exactly, as text. Needs numpy, onnx and tritonclient[grpc] (and [http]).
"""

import json
import sys

import numpy as np
import onnx
import tritonclient.grpc as g
import ml_dtypes
from onnx.reference import ReferenceEvaluator

NUMPY_TYPES = {"FP32": np.float32, "FP64": np.float64, "FP16": np.float16, "INT8": np.int8,
               "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
               "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "BOOL": np.bool_,
               "BF16": ml_dtypes.bfloat16}
# A 16-bit float output may be a rounding of its type away from the reference
# (which rounds at numpy's points), as in tests/node_test_runner.cc.
RTOL = {"FP16": 2.0 ** -9, "BF16": 2.0 ** -6}


def Text(array):
    """A BYTES tensor's elements as str (tritonclient gives bytes, the
    reference evaluator str)."""
    return [x.decode() if isinstance(x, bytes) else str(x) for x in np.asarray(array).ravel()]


def Matches(got, want, datatype):
    """BYTES exactly, as text; numbers within the type's rounding. Raveled:
    a config's reshape gives the client other dims of the same elements."""
    if datatype == "BYTES":
        return Text(got) == Text(want)
    return np.allclose(got.astype(np.float64).ravel(), want.astype(np.float64).ravel(),
                       rtol=RTOL.get(datatype, 1e-5), atol=1e-6)


def HttpAnswers(http_url, name, version, md, sent):
    """The model's answers over HTTP/REST to the same inputs, by transport:
    JSON, then Triton's binary data extension (binary only where a tensor is
    FP16 or BF16, which have no JSON form in Triton's protocol)."""
    import tritonclient.http as h
    client = h.InferenceServerClient(http_url)
    half = any(t["datatype"] in ("FP16", "BF16") for t in md["inputs"] + md["outputs"])
    answers = {}
    for binary in ([True] if half else [False, True]):
        inputs = []
        for t in md["inputs"]:
            tensor = h.InferInput(t["name"], list(sent[t["name"]].shape), t["datatype"])
            tensor.set_data_from_numpy(sent[t["name"]], binary_data=binary)
            inputs.append(tensor)
        outputs = [h.InferRequestedOutput(o["name"], binary_data=binary) for o in md["outputs"]]
        answers["HTTP binary" if binary else "HTTP JSON"] = client.infer(
            name, inputs, outputs=outputs, model_version=version)
    client.close()
    return answers


def main():
    repo, url = sys.argv[1], sys.argv[2]
    http_url = sys.argv[3] if len(sys.argv) > 3 else None
    c = g.InferenceServerClient(url)
    idx = c.get_model_repository_index(as_json=True).get("models", [])
    ok, bad, notready = [], [], []
    rng = np.random.default_rng(0)
    for m in idx:
        name, version = m["name"], m.get("version", "1")
        if m.get("state") != "READY":
            notready.append(name)
            continue
        md = c.get_model_metadata(name, as_json=True)
        cfg = c.get_model_config(name, as_json=True)["config"]
        batching = int(cfg.get("max_batch_size", 0)) > 0
        feeds, inputs = {}, []
        for t in md["inputs"]:
            # A -1 beyond the batch is a shape dim the request chooses: 16,
            # the smallest of the buckets a config without any gets.
            shape = [16 if int(s) == -1 else int(s) for s in t["shape"]]
            if batching:
                shape[0] = 2  # two rows of a batching model
            if t["datatype"] == "BYTES":
                # Numbers as text, as Triton's QA clients send them (an
                # "object" tensor of str): what the models' Casts read.
                arr = np.array([str(x) for x in rng.integers(-5, 5, size=shape).ravel()],
                               dtype=object).reshape(shape)
            else:
                dt = NUMPY_TYPES[t["datatype"]]
                arr = (rng.integers(0, 5, size=shape)
                       if np.issubdtype(dt, np.integer) or dt == np.bool_
                       else rng.standard_normal(shape)).astype(dt)
            tensor = g.InferInput(t["name"], shape, t["datatype"])
            tensor.set_data_from_numpy(arr)
            inputs.append(tensor)
            feeds[t["name"]] = arr
        try:
            answers = {"gRPC": c.infer(name, inputs, model_version=version)}
            if http_url:
                answers.update(HttpAnswers(http_url, name, version, md, dict(feeds)))
            model = onnx.load(f"{repo}/{name}/{version}/model.onnx")
            # A config reshape gives the model its own shape of the same data.
            for cin in cfg.get("input", []):
                if "reshape" in cin:
                    lead = [feeds[cin["name"]].shape[0]] if batching else []
                    feeds[cin["name"]] = feeds[cin["name"]].reshape(
                        lead + [int(d) for d in cin["reshape"].get("shape", [])])
            sess = ReferenceEvaluator(model)
            want = dict(zip([o.name for o in model.graph.output], sess.run(None, feeds)))
            wrong = [transport for transport, r in answers.items()
                     if not all(Matches(r.as_numpy(o["name"]), want[o["name"]], o["datatype"])
                                for o in md["outputs"])]
            if wrong:
                bad.append(f"{name}/{version}: wrong over {', '.join(wrong)}")
            else:
                ok.append(f"{name}/{version}")
        except Exception as error:  # a failed call is a wrong answer, with its reason
            bad.append(f"{name}: {str(error)[:120]}")
    print(json.dumps({"ready_and_right": len(ok), "ready_but_wrong": bad,
                      "not_ready": len(notready)}, indent=1))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
