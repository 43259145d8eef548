"""Triton's invalid model configs (its QA's qa/L0_model_config) against the
real graphserve binary: each config that applies to ONNX models is refused
at load, and its reason carries Triton's expected text, or, where Triton's
text comes from its ONNX Runtime backend, names the same tensor or field.

The configs are Triton's QA inputs, copied as fixtures under
tests/data/triton_qa_model_config (its README says from where). Triton's QA
runs the noautofill_platform configs with `platform: "onnxruntime_onnx"`
appended (one of its trials); so does this test. Triton refuses those before
it looks for a model file; GraphServe needs one to call the directory a
model, so each gets a tiny ONNX model with the config's tensor names and
types, written here with onnx's helper. Controls (a corrected config beside
the same model) must load, so a refusal can only come from the config.

One server serves the whole repository (--exit-on-error=false); the test
reads each model's state and reason from the repository index. Triton's
invalid ensembles (autofill_noplatform/ensemble) get a repository and a
server each, as Triton's QA runs them, since their models share names.
"""

import os
import re
import shutil
import sys
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import tritonclient.grpc as grpcclient

import graphserve_process as gp

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_index = {}  # model name -> {"state": ..., "reason": ...}

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "triton_qa_model_config")
# ONNX files as small and plain as graphserve imports: IR 7, opset 13.
OPSET = 13


def save(model_proto, directory):
    os.makedirs(os.path.join(directory, "1"), exist_ok=True)
    model_proto.ir_version = 7
    onnx.checker.check_model(model_proto)
    onnx.save(model_proto, os.path.join(directory, "1", "model.onnx"))


def model_of(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "qa_model", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def int32_identity():
    """INPUT int32 [batch,1] -> OUTPUT = INPUT: the sequence, priority,
    ordering and batch-input configs' tensors."""
    return model_of(
        [helper.make_node("Identity", ["INPUT"], ["OUTPUT"])],
        [helper.make_tensor_value_info("INPUT", TensorProto.INT32, ["batch", 1])],
        [helper.make_tensor_value_info("OUTPUT", TensorProto.INT32, ["batch", 1])])


def image_classifier():
    """data fp32 [batch,1,28,28] -> prob [batch,10,1,1]: the instance group
    and max_batch_size configs' tensors."""
    weights = numpy_helper.from_array(
        np.linspace(-1, 1, 784 * 10, dtype=np.float32).reshape(784, 10), "W")
    shape = numpy_helper.from_array(np.array([-1, 10, 1, 1], dtype=np.int64), "prob_shape")
    return model_of(
        [helper.make_node("Flatten", ["data"], ["flat"], axis=1),
         helper.make_node("MatMul", ["flat", "W"], ["logits"]),
         helper.make_node("Reshape", ["logits", "prob_shape"], ["prob"])],
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["batch", 1, 28, 28])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["batch", 10, 1, 1])],
        [weights, shape])


def float_sum():
    """input fp32 [batch,n] -> output = its row sum [batch,1]: the dims and
    reshape configs' tensors (their dims differ; they are refused before the
    model is compared)."""
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    return model_of(
        [helper.make_node("ReduceSum", ["input", "axes"], ["output"], keepdims=1)],
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1])],
        [axes])


def simple_int8(batching=True):
    """Triton's onnx_int32_int32_int8 QA model, as qa/L0_model_config's onnx
    cases ship it: INPUT0, INPUT1 int32 [batch,16] -> OUTPUT0 = INPUT0 +
    INPUT1, OUTPUT1 = INPUT0 - INPUT1, both cast to int8. Without batching
    the tensors are [16] (the bad_max_batch_size case)."""
    shape = ["batch", 16] if batching else [16]
    return model_of(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["sum"]),
         helper.make_node("Sub", ["INPUT0", "INPUT1"], ["difference"]),
         helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=TensorProto.INT8),
         helper.make_node("Cast", ["difference"], ["OUTPUT1"], to=TensorProto.INT8)],
        [helper.make_tensor_value_info(name, TensorProto.INT32, shape)
         for name in ("INPUT0", "INPUT1")],
        [helper.make_tensor_value_info(name, TensorProto.INT8, shape)
         for name in ("OUTPUT0", "OUTPUT1")])


def model_for(config_text):
    """The tiny model with a noautofill_platform config's tensor names."""
    if re.search(r'name:\s*"INPUT"', config_text):
        return int32_identity()
    if re.search(r'name:\s*"data"', config_text):
        return image_classifier()
    if re.search(r'name:\s*"input"', config_text):
        return float_sum()
    raise ValueError(f"no model for a config with these tensors:\n{config_text}")


def read(*path):
    with open(os.path.join(FIXTURES, *path)) as f:
        return f.read()


def grep_pattern(expected):
    """Triton's `expected` files are grep basic regular expressions (\\[ for
    a bracket, ( and ) literal): as a Python pattern."""
    pattern = expected.strip()
    for literal in "(){}+?|":
        pattern = pattern.replace(literal, "\\" + literal)
    return pattern


NOAUTOFILL = sorted(os.listdir(os.path.join(FIXTURES, "noautofill_platform")))

# Triton's ONNX Runtime backend words these itself; GraphServe's refusal
# names the same tensor and what differs.
AUTOFILL_ONNX = {
    "bad_input_dims": ["input 'INPUT0'", "dims [16,1]", "[16]"],
    "bad_max_batch_size": ["autofill failed for model 'bad_max_batch_size': model does not "
                           "support batching while non-zero max_batch_size is specified",
                           "input 'INPUT0'"],
    "bad_output_dims": ["output 'OUTPUT1'", "dims [1]", "[16]"],
    "too_few_inputs": ["input 'INPUT0'"],
    "too_many_inputs": ["input 'INPUT_EXTRA'"],
    "unknown_input": ["input 'INPUT_UNKNOWN'", "INPUT0, INPUT1"],
    "unknown_output": ["output 'OUTPUT_UNKNOWN'", "OUTPUT0, OUTPUT1"],
}

# Corrected configs beside the same models: these must load, so that the
# cases above are refused for their config alone.
INT32_TENSORS = """
    max_batch_size: 8
    input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
    output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
    """
CONTROLS = {
    "control_int32": (int32_identity, INT32_TENSORS + """
        dynamic_batching { preserve_ordering: true priority_levels: 1 default_priority_level: 1 }
        """),
    "control_image": (image_classifier, """
        max_batch_size: 8
        input [ { name: "data" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 1, 28, 28 ] } ]
        output [ { name: "prob" data_type: TYPE_FP32 dims: [ 10, 1, 1 ] } ]
        instance_group [ { kind: KIND_CPU } ]
        """),
    "control_float_sum": (float_sum, """
        max_batch_size: 4
        input [ { name: "input" data_type: TYPE_FP32 dims: [ 2, 2 ] reshape { shape: [ 4 ] } } ]
        output [ { name: "output" data_type: TYPE_FP32 dims: [ 1 ] } ]
        """),
    "control_simple_int8": (simple_int8, """
        max_batch_size: 1
        input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
                { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
        output [ { name: "OUTPUT0" data_type: TYPE_INT8 dims: [ 16 ] },
                 { name: "OUTPUT1" data_type: TYPE_INT8 dims: [ 16 ] } ]
        """),
}

# Valid for Triton, not served by GraphServe: refused at load, saying so
# (server/config_validation.h, RefuseUnservedFeatures; ensembles by their
# platform). (config text added to the int32 model's tensors, what the
# reason must say)
UNSERVED = {
    "decoupled": ("model_transaction_policy { decoupled: true }",
                  "decoupled models are not supported"),
    "sequence": ("""sequence_batching {
                      iterative_sequence: true
                      control_input [ { name: "START" control [ {
                          kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
                    }""",
                 "iterative (generative) sequences"),
    "batch_input": ("""batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "COUNT"
                                       data_type: TYPE_FP32 source_input: "INPUT" } ]""",
                    "batch inputs and batch outputs are not supported"),
}

# The host executor serves a config written for GPUs (Note [Triton's config
# rules] in server/config_validation.cc); GPU ids are checked on the CUDA
# executor, against the visible GPUs (config_validation_test's
# GpuIdBeyondTheVisibleGpusOnTheCudaExecutor).
LOADS_ON_THE_HOST = {"invalid_gpu"}

# qa/L0_model_config's other cases, and why they are not run here.
NOT_ONNX = {
    "autofill_noplatform/ensemble/invalid_decoupled_branching*": "decoupled models (the repeat "
                                                                  "backend), which GraphServe "
                                                                  "refuses at load",
    "autofill_noplatform/python/*": "Python backend models (model.py auto-complete)",
    "autofill_noplatform/pytorch/*": "PyTorch models",
    "autofill_noplatform/tensorrt/*": "TensorRT plans",
    "autofill_noplatform/openvino/*": "OpenVINO models",
    "autofill_noplatform/custom/*": "custom backends named by the model file's extension",
    "autofill_noplatform/common/no_version": "Triton cannot tell the backend without a model "
                                             "file; GraphServe serves ONNX only, and a model "
                                             "directory without one is refused by the scan",
    "special_cases/invalid_runtime": "the identity backend's runtime library",
    "special_cases/runtime_escape": "the identity backend's runtime library path",
    "model_metrics/*": "Python backend models (the metric rules themselves are unit-tested in "
                       "server/config_validation_test.cc)",
    "custom_parameters/*": "TensorRT parameters",
    "cli_messages/*": "tritonserver's command line, not model configs",
}


# qa/L0_model_config/autofill_noplatform/ensemble: one repository per case, as
# Triton's QA runs them. Its composing models (the identity backend's) become
# ONNX identities, OUTPUTi = INPUTi, of the config's types and dims.
ENSEMBLE_FIXTURES = os.path.join(FIXTURES, "autofill_noplatform", "ensemble")
ENSEMBLE_CASES = sorted(case for case in os.listdir(ENSEMBLE_FIXTURES)
                        if not case.startswith("invalid_decoupled_branching"))
ONNX_TYPES = {"TYPE_FP32": TensorProto.FLOAT, "TYPE_INT32": TensorProto.INT32}


def identity_for(config_text):
    """OUTPUTi = INPUTi for an identity-backend config's tensors."""
    batching = int(re.search(r"max_batch_size:\s*(\d+)", config_text).group(1)) > 0
    tensors = re.findall(r'name:\s*"(\w+)"\s*data_type:\s*(\w+)\s*dims:\s*\[([^\]]*)\]',
                         config_text)
    value = lambda name, kind, dims: helper.make_tensor_value_info(
        name, ONNX_TYPES[kind], (["batch"] if batching else []) + [int(d) for d in dims.split(",")])
    inputs = [t for t in tensors if t[0].startswith("INPUT")]
    outputs = [t for t in tensors if t[0].startswith("OUTPUT")]
    return model_of([helper.make_node("Identity", [i[0]], [o[0]]) for i, o in zip(inputs, outputs)],
                    [value(*t) for t in inputs], [value(*t) for t in outputs])


def write_ensemble_case(case, root):
    """The case's models under `root`: its ensembles with an empty version
    directory, the others as ONNX identities."""
    case_dir = os.path.join(ENSEMBLE_FIXTURES, case)
    models = {"": case_dir} if os.path.exists(os.path.join(case_dir, "config.pbtxt")) else {
        name: os.path.join(case_dir, name) for name in os.listdir(case_dir)
        if os.path.isdir(os.path.join(case_dir, name))}
    for name, source in models.items():
        config = read(source, "config.pbtxt")
        # Named by its config, as Triton's QA copies it (two differ from the case).
        directory = os.path.join(root, re.search(r'name:\s*"(\w+)"', config).group(1))
        if 'platform: "ensemble"' in config or "ensemble_scheduling" in config:
            os.makedirs(os.path.join(directory, "1"))
        else:
            config = config.replace('backend: "identity"', 'platform: "onnxruntime_onnx"')
            save(identity_for(config), directory)
        with open(os.path.join(directory, "config.pbtxt"), "w") as f:
            f.write(config)


def write_repository(root):
    for case in NOAUTOFILL:
        config = read("noautofill_platform", case, "config.pbtxt")
        # As Triton's QA runs its onnxruntime_onnx trial.
        config = re.sub(r"(?m)^.*platform:.*$", "", config) + '\nplatform: "onnxruntime_onnx"\n'
        directory = os.path.join(root, case)
        save(model_for(config), directory)
        with open(os.path.join(directory, "config.pbtxt"), "w") as f:
            f.write(config)
    for case in AUTOFILL_ONNX:
        directory = os.path.join(root, case)
        save(simple_int8(batching=case != "bad_max_batch_size"), directory)
        shutil.copy(os.path.join(FIXTURES, "autofill_noplatform", "onnx", case, "config.pbtxt"),
                    directory)
    directory = os.path.join(root, "invalid_platform")
    save(simple_int8(), directory)
    shutil.copy(os.path.join(FIXTURES, "special_cases", "invalid_platform", "config.pbtxt"),
                directory)
    for name, (make, config) in CONTROLS.items():
        save(make(), os.path.join(root, name))
        with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
            f.write(f'name: "{name}"\nplatform: "onnxruntime_onnx"\n{config}')
    for name, (extra, _) in UNSERVED.items():
        save(int32_identity(), os.path.join(root, name))
        with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
            f.write(f'name: "{name}"\nplatform: "onnxruntime_onnx"\n{INT32_TENSORS}\n{extra}\n')
    # An ensemble of the int32 control, as Triton's docs write one: no model
    # file of its own. It loads and answers (tests/ensemble_test.py for more).
    os.makedirs(os.path.join(root, "ensemble", "1"))
    with open(os.path.join(root, "ensemble", "config.pbtxt"), "w") as f:
        f.write("""name: "ensemble"
                   platform: "ensemble"
                   max_batch_size: 8
                   input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
                   output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
                   ensemble_scheduling { step [ { model_name: "control_int32" model_version: -1
                       input_map { key: "INPUT" value: "IN" }
                       output_map { key: "OUTPUT" value: "OUT" } } ] }
                """)


def setUpModule():
    global _server
    root = os.path.join(gp.scratch_dir("triton_qa_"), "models")
    os.makedirs(root)
    write_repository(root)
    _server = gp.ServerProcess(SERVER_BINARY, root, ("--exit-on-error=false",)).start()
    client = grpcclient.InferenceServerClient(_server.url)
    try:
        for model in client.get_model_repository_index(as_json=True).get("models", []):
            _index[model["name"]] = model
    finally:
        client.close()


def tearDownModule():
    gp.stop_checked(_server)


class TritonModelConfigTest(unittest.TestCase):

    def refusal(self, name):
        """The reason `name` was not loaded (failing when it loaded)."""
        self.assertIn(name, _index, f"'{name}' is not in the repository index")
        model = _index[name]
        self.assertNotEqual(model.get("state"), "READY", f"'{name}' loaded: {model}")
        reason = model.get("reason", "")
        self.assertTrue(reason, f"'{name}' has no reason: {model}")
        return reason

    def test_controls_load(self):
        for name in CONTROLS:
            with self.subTest(name):
                self.assertEqual(_index.get(name, {}).get("state"), "READY",
                                 f"{_index.get(name)}\n{_server.output()}")

    def test_noautofill_configs_are_refused_with_tritons_text(self):
        # Triton's QA accepts any of a case's expected* files; `expected` is
        # the onnxruntime_onnx trial's.
        self.assertEqual(len(NOAUTOFILL), 58)
        for case in NOAUTOFILL:
            with self.subTest(case):
                if case in LOADS_ON_THE_HOST:
                    self.assertEqual(_index[case].get("state"), "READY", _index[case])
                    continue
                reason = self.refusal(case)
                expected = read("noautofill_platform", case, "expected")
                self.assertRegex(reason, grep_pattern(expected))

    def test_onnx_configs_not_matching_the_model_are_refused_naming_the_tensor(self):
        for case, named in AUTOFILL_ONNX.items():
            with self.subTest(case):
                reason = self.refusal(case)
                for text in named:
                    self.assertIn(text, reason)

    def test_a_misspelt_platform_is_refused_by_name(self):
        reason = self.refusal("invalid_platform")
        self.assertIn("platform 'onnxruntim'", reason)

    def test_valid_configs_graphserve_does_not_serve_are_refused_saying_so(self):
        for name, (_, said) in UNSERVED.items():
            with self.subTest(name):
                self.assertIn(said, self.refusal(name))

    def test_an_ensemble_as_tritons_docs_write_it_loads_and_answers(self):
        self.assertEqual(_index.get("ensemble", {}).get("state"), "READY", _index.get("ensemble"))
        client = grpcclient.InferenceServerClient(_server.url)
        try:
            data = np.array([[7], [-3]], dtype=np.int32)
            infer_input = grpcclient.InferInput("IN", [2, 1], "INT32")
            infer_input.set_data_from_numpy(data)
            result = client.infer("ensemble", [infer_input])
            np.testing.assert_array_equal(result.as_numpy("OUT"), data)
        finally:
            client.close()

    def test_tritons_invalid_ensembles_are_refused_with_tritons_text(self):
        # Triton's QA greps its log for any of a case's expected* files; here
        # the reasons of the models that did not load stand for the log.
        self.assertEqual(len(ENSEMBLE_CASES), 30)
        for case in ENSEMBLE_CASES:
            with self.subTest(case):
                root = os.path.join(gp.scratch_dir(f"qa_{case}_"), "models")
                os.makedirs(root)
                write_ensemble_case(case, root)
                with gp.ServerProcess(SERVER_BINARY, root, ("--exit-on-error=false",)) as server:
                    client = grpcclient.InferenceServerClient(server.url)
                    try:
                        index = client.get_model_repository_index(as_json=True).get("models", [])
                    finally:
                        client.close()
                reasons = [m.get("reason", "") for m in index if m.get("state") != "READY"]
                patterns = [grep_pattern(read(ENSEMBLE_FIXTURES, case, name))
                            for name in sorted(os.listdir(os.path.join(ENSEMBLE_FIXTURES, case)))
                            if name.startswith("expected")]
                self.assertTrue(any(re.search(p, r) for p in patterns for r in reasons),
                                f"{case}: none of {reasons} matches {patterns}")

    def test_cases_about_other_backends_are_listed_with_why(self):
        # Not run, and not silently dropped: each with its reason.
        for cases, why in NOT_ONNX.items():
            with self.subTest(cases):
                self.skipTest(f"{cases}: {why}")


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
