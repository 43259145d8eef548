"""Triton's hand-written ONNX model configs (its docs, tutorials and QA)
served unchanged by the real graphserve binary on the host executor: how
many load, and each loaded one answering like onnxruntime (issues 27, 31).

The configs are copied as fixtures under tests/data/triton_handwritten_configs
(its README lists each one's source and commit). Triton ships the model file
for few of them and CI fetches nothing, so each gets a stand-in written here
with onnx's helper: the input and output names, types and shapes its config
declares (the shapes the model sees, after `reshape`), a body of a few plain
ops, mirroring the model file where Triton ships one.

Configs that share a model name (six of the tutorials' are text_recognition)
cannot share a repository: they are served in rounds, one server and
one repository per round, each model under its config's name.

The floor: every config in LOADS must load. The others are recorded in
NOT_LOADED with why, and each must be refused with a reason that says so;
one that starts loading is reported (move it to LOADS). Every loaded model
answers one request of random data of its declared shapes and types, which
must match onnxruntime on the stand-in; one whose config declares optional
inputs answers twice, with them and without them (the model's defaults).
"""

import os
import sys
import unittest

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper
import tritonclient.grpc as grpcclient
from tritonclient.grpc import model_config_pb2

import graphserve_process as gp

SERVER_BINARY = MAKE_REPOSITORY = None

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "triton_handwritten_configs")
CONFIGS = sorted(name for name in os.listdir(FIXTURES)
                 if os.path.isdir(os.path.join(FIXTURES, name)))

# Triton's example models are exported at IR 10, opset 21; the stand-ins
# are too, so that the importer sees what Triton's own files carry.
IR_VERSION = 10
OPSET = 21

# -1 in a config's dims: the extent the requests use. Triton takes any;
# GraphServe takes a model whose answers see padding (the encoder's mean
# over tokens, the detector's over pixels) at its buckets' extents only, and
# 16 is the smallest of its default buckets (Note [Shape buckets]).
VARIABLE_EXTENT = 16
# Rows of the request to a batching model: more than one, at most every
# config's max_batch_size.
BATCH_ROWS = 2
# The sequence sent to the sequence models' single request.
SEQUENCE_ID = 1007


def read_config(name):
    """The fixture's config as Triton's own proto reads it."""
    config = model_config_pb2.ModelConfig()
    with open(os.path.join(FIXTURES, name, "config.pbtxt")) as f:
        text_format.Parse(f.read(), config)
    return config


# The stand-ins. A dim of None is a dynamic dim without a name, as Triton's
# example models write their batch dimension.
def value(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def model_of(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "stand_in", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def constant(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def add_sub(in_type, out_type, shape):
    """Triton's `simple` models: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 -
    INPUT1, computed in int32 between casts (as simple_int8 and simple_string
    compute them) where the tensors are not int32 or float."""
    compute = in_type if in_type in (TensorProto.INT32, TensorProto.FLOAT) else TensorProto.INT32
    nodes = [helper.make_node("Cast", [f"INPUT{i}"], [f"in{i}"], to=compute) for i in (0, 1)]
    nodes += [helper.make_node("Add", ["in0", "in1"], ["sum"]),
              helper.make_node("Sub", ["in0", "in1"], ["difference"]),
              helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=out_type),
              helper.make_node("Cast", ["difference"], ["OUTPUT1"], to=out_type)]
    return model_of(nodes, [value(f"INPUT{i}", in_type, shape) for i in (0, 1)],
                    [value(f"OUTPUT{i}", out_type, shape) for i in (0, 1)])


def sequence(dyna):
    """Triton's simple_sequence, (INPUT + START) * READY; simple_dyna_sequence
    adds END * CORRID, so the last answer of a sequence carries its id."""
    shape = [None, 1]
    controls = ["START", "READY"] + (["END"] if dyna else [])
    nodes = [helper.make_node("Add", ["INPUT", "START"], ["sum"])]
    if dyna:
        nodes += [helper.make_node("Cast", ["CORRID"], ["corrid32"], to=TensorProto.INT32),
                  helper.make_node("Mul", ["END", "corrid32"], ["last"]),
                  helper.make_node("Add", ["sum", "last"], ["total"])]
    nodes.append(helper.make_node("Mul", ["READY", "total" if dyna else "sum"], ["OUTPUT"]))
    inputs = [value(name, TensorProto.INT32, shape) for name in ["INPUT"] + controls]
    if dyna:
        inputs.append(value("CORRID", TensorProto.UINT64, shape))
    return model_of(nodes, inputs, [value("OUTPUT", TensorProto.INT32, shape)])


def identity(elem_type, shape):
    return model_of([helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
                    [value("INPUT0", elem_type, shape)], [value("OUTPUT0", elem_type, shape)])


def initializer_as_input():
    """Triton's qa/L0_initializer_as_input model: OUTPUT = INPUT + INITIALIZER,
    where INITIALIZER is a graph input with a default (an initializer of the
    same name), so a request may leave it out."""
    default = constant("INITIALIZER", np.arange(25, dtype=np.float32).reshape(5, 5))
    return model_of([helper.make_node("Add", ["INPUT", "INITIALIZER"], ["OUTPUT"])],
                    [value("INPUT", TensorProto.FLOAT, [5, 5]),
                     value("INITIALIZER", TensorProto.FLOAT, [5, 5])],
                    [value("OUTPUT", TensorProto.FLOAT, [5, 5])], [default])


def classifier(input_name, input_shape, channel_axis, output_name, output_shape, softmax):
    """An image classifier's signature (densenet's NCHW, inception's NHWC):
    the image's channel means through a [3, classes] matrix, reshaped to the
    output's shape."""
    classes = int(np.prod(output_shape))
    spatial = [axis for axis in range(1, 4) if axis != channel_axis]
    nodes = [helper.make_node("ReduceMean", [input_name, "spatial"], ["means"], keepdims=0),
             helper.make_node("MatMul", ["means", "weights"], ["logits"])]
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["scores"], axis=-1))
    nodes.append(helper.make_node("Reshape", ["scores" if softmax else "logits", "shape"],
                                  [output_name]))
    weights = np.linspace(-1, 1, 3 * classes, dtype=np.float32).reshape(3, classes)
    return model_of(nodes, [value(input_name, TensorProto.FLOAT, input_shape)],
                    [value(output_name, TensorProto.FLOAT, output_shape)],
                    [constant("spatial", np.array(spatial)), constant("weights", weights),
                     constant("shape", np.array(output_shape))])


def text_recognition(batch):
    """The tutorials' text recognition signature: input.1 [batch, 1, 32, 100]
    -> 308 [batch, 26, 37], a window of the image."""
    nodes = [helper.make_node("Slice", ["input.1", "starts", "ends", "axes"], ["window"]),
             helper.make_node("Reshape", ["window", "shape"], ["308"])]
    return model_of(nodes, [value("input.1", TensorProto.FLOAT, [batch, 1, 32, 100])],
                    [value("308", TensorProto.FLOAT, [batch, 26, 37])],
                    [constant("starts", np.array([0, 0])), constant("ends", np.array([26, 37])),
                     constant("axes", np.array([2, 3])),
                     constant("shape", np.array([-1, 26, 37]))])


def text_detection(leading):
    """The tutorials' EAST text detection signature: input_images:0 [...,
    height, width, 3] -> a score map [..., 1] and a geometry map [..., 5].
    The score is each pixel's against the image's mean, so that, as in the
    real network's convolutions, a pixel's answer sees the others (and
    padding the image changes it)."""
    spatial = [len(leading) - 2, len(leading) - 1]  # height, width
    image = "input_images:0"
    nodes = [helper.make_node("MatMul", [image, "score_weights"], ["pixel_scores"]),
             helper.make_node("ReduceMean", ["pixel_scores", "spatial"], ["mean_score"],
                              keepdims=1),
             helper.make_node("Sub", ["pixel_scores", "mean_score"], ["score_logits"]),
             helper.make_node("Sigmoid", ["score_logits"], ["feature_fusion/Conv_7/Sigmoid:0"]),
             helper.make_node("MatMul", [image, "geometry_weights"],
                              ["feature_fusion/concat_3:0"])]
    return model_of(nodes, [value(image, TensorProto.FLOAT, leading + [3])],
                    [value("feature_fusion/Conv_7/Sigmoid:0", TensorProto.FLOAT, leading + [1]),
                     value("feature_fusion/concat_3:0", TensorProto.FLOAT, leading + [5])],
                    [constant("score_weights", np.array([[0.5], [-0.25], [1.0]], np.float32)),
                     constant("geometry_weights",
                              np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)),
                     constant("spatial", np.array(spatial))])


def text_encoder():
    """The tutorials' text encoder signature (a BERT-sized encoder): int32
    input_ids [batch, tokens] -> last_hidden_state [batch, tokens, 768] and
    pooler_output [batch, 768], the tokens' mean."""
    width = 768  # BERT-base's hidden size, as the config declares
    nodes = [helper.make_node("Cast", ["input_ids"], ["ids"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["ids", "last_axis"], ["column"]),
             helper.make_node("MatMul", ["column", "embedding"], ["last_hidden_state"]),
             helper.make_node("ReduceMean", ["last_hidden_state", "token_axis"],
                              ["pooler_output"], keepdims=0)]
    embedding = np.linspace(-1, 1, width, dtype=np.float32).reshape(1, width)
    return model_of(nodes, [value("input_ids", TensorProto.INT32, ["batch", "tokens"])],
                    [value("pooler_output", TensorProto.FLOAT, ["batch", width]),
                     value("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", width])],
                    [constant("embedding", embedding), constant("last_axis", np.array([-1])),
                     constant("token_axis", np.array([1]))])


SIMPLE = [None, 16]
STAND_INS = {
    "qa_autofill_cpu_instance": lambda: identity(TensorProto.FLOAT16, [None, "rows", "columns"]),
    # Triton's onnx_int32_int32_int8 QA model, batching and not.
    "qa_autofill_empty_config": lambda: add_sub(TensorProto.INT32, TensorProto.INT8,
                                                ["var_0", 16]),
    "qa_autofill_no_config_no_batch": lambda: add_sub(TensorProto.INT32, TensorProto.INT8, [16]),
    "qa_initializer_as_input": initializer_as_input,
    "qa_simple_ensemble_simple": lambda: add_sub(TensorProto.INT32, TensorProto.INT32, SIMPLE),
    "qa_socket_simple": lambda: add_sub(TensorProto.INT32, TensorProto.INT32, SIMPLE),
    "server_docs_densenet_onnx": lambda: classifier("data_0", [1, 3, 224, 224], 1, "fc6_1",
                                                    [1, 1000, 1, 1], softmax=False),
    "server_docs_inception_onnx": lambda: classifier(
        "input:0", [1, 299, 299, 3], 3, "InceptionV3/Predictions/Softmax:0", [1, 1001],
        softmax=True),
    "server_docs_simple": lambda: add_sub(TensorProto.INT32, TensorProto.INT32, SIMPLE),
    "server_docs_simple_dyna_sequence": lambda: sequence(dyna=True),
    "server_docs_simple_int8": lambda: add_sub(TensorProto.INT8, TensorProto.INT8, SIMPLE),
    "server_docs_simple_sequence": lambda: sequence(dyna=False),
    "server_docs_simple_string": lambda: add_sub(TensorProto.STRING, TensorProto.STRING, SIMPLE),
    "server_mlflow_onnx_float32_int32_int32": lambda: add_sub(TensorProto.FLOAT,
                                                              TensorProto.INT32, SIMPLE),
    "server_perf_tuning_densenet_onnx": lambda: classifier("data_0", [1, 3, 224, 224], 1,
                                                           "prob_1", [1, 1000, 1, 1],
                                                           softmax=False),
    "server_python_examples_identity": lambda: identity(TensorProto.STRING, [None, "length"]),
    "tutorials_part1_readme_text_detection": lambda: text_detection(
        ["batch", "images", "height", "width"]),
    "tutorials_part1_text_detection": lambda: text_detection(["images", "height", "width"]),
    "tutorials_part1_text_recognition": lambda: text_recognition(1),
    "tutorials_part2_text_recognition": lambda: text_recognition("batch"),
    "tutorials_part4_ort_cuda_ep": lambda: text_recognition("batch"),
    "tutorials_part4_ort_openvino": lambda: text_recognition("batch"),
    "tutorials_part4_ort_trt": lambda: text_recognition("batch"),
    "tutorials_part5_text_detection": lambda: text_detection(["batch", "height", "width"]),
    "tutorials_part5_text_recognition": lambda: text_recognition("batch"),
    "tutorials_part6_text_encoder": text_encoder,
}

# The configs that load today: each must keep loading.
LOADS = {
    "qa_autofill_cpu_instance",
    "qa_autofill_empty_config",
    "qa_autofill_no_config_no_batch",
    # An initializer the ONNX file also lists among its graph inputs is an
    # input with a default: the config declares it `optional: true`, a
    # request may leave it out (the initializer's value) or send it (Note
    # [Inputs with defaults] in runtime/ir.h).
    "qa_initializer_as_input",
    "qa_simple_ensemble_simple",
    "qa_socket_simple",
    "server_docs_densenet_onnx",
    "server_docs_inception_onnx",
    "server_docs_simple",
    "server_docs_simple_dyna_sequence",
    "server_docs_simple_int8",
    "server_docs_simple_sequence",
    # BYTES (TYPE_STRING) tensors at the model's edges (Note [Strings at the
    # model's edges] in runtime/ir.h).
    "server_docs_simple_string",
    "server_mlflow_onnx_float32_int32_int32",
    "server_perf_tuning_densenet_onnx",
    "server_python_examples_identity",
    "tutorials_part1_readme_text_detection",
    # max_batch_size 0 with a dynamic first dim (the images of one request):
    # a shape dim like height and width (Note [Models without a batch dim]
    # in runtime/ir.h).
    "tutorials_part1_text_detection",
    "tutorials_part1_text_recognition",
    "tutorials_part2_text_recognition",
    "tutorials_part4_ort_cuda_ep",
    "tutorials_part4_ort_openvino",
    "tutorials_part4_ort_trt",
    "tutorials_part5_text_detection",
    "tutorials_part5_text_recognition",
    "tutorials_part6_text_encoder",
}

# The configs that do not load, and the part of the server's reason that
# says why. Each is a feature GraphServe does not have yet: none now.
NOT_LOADED = {}


def model_name(name, config):
    """The name the config serves under: its own, or its directory's."""
    return config.name or name


def rounds():
    """The configs in rounds whose model names differ: [{model: fixture}]."""
    result = []
    for name in CONFIGS:
        served_as = model_name(name, read_config(name))
        free = next((r for r in result if served_as not in r), None)
        if free is None:
            free = {}
            result.append(free)
        free[served_as] = name
    return result


def write_model(root, served_as, name):
    directory = os.path.join(root, served_as)
    os.makedirs(os.path.join(directory, "1"))
    onnx.save(STAND_INS[name](), os.path.join(directory, "1", "model.onnx"))
    with open(os.path.join(FIXTURES, name, "config.pbtxt")) as f:
        text = f.read()
    with open(os.path.join(directory, "config.pbtxt"), "w") as f:
        f.write(text)
    # A label file a config names is shipped beside it (Triton's are the
    # classes' names); one line per class stands in.
    for output in read_config(name).output:
        if output.label_filename:
            classes = int(np.prod([d for d in output.dims if d > 0]))
            with open(os.path.join(directory, output.label_filename), "w") as f:
                f.write("".join(f"class_{i}\n" for i in range(classes)))


# A config's data_type: (the protocol's datatype, numpy's type).
DATATYPES = {
    "TYPE_BOOL": ("BOOL", np.bool_),
    "TYPE_UINT8": ("UINT8", np.uint8),
    "TYPE_INT8": ("INT8", np.int8),
    "TYPE_INT16": ("INT16", np.int16),
    "TYPE_INT32": ("INT32", np.int32),
    "TYPE_INT64": ("INT64", np.int64),
    "TYPE_UINT64": ("UINT64", np.uint64),
    "TYPE_FP16": ("FP16", np.float16),
    "TYPE_FP32": ("FP32", np.float32),
    "TYPE_FP64": ("FP64", np.float64),
    "TYPE_STRING": ("BYTES", np.object_),
}


def random_tensor(rng, data_type, shape):
    """Values every stand-in takes without overflow: small integers (int8
    sums stay in range), floats in [-1, 1), strings of integers."""
    _, dtype = DATATYPES[data_type]
    if dtype == np.object_:
        return rng.integers(-50, 50, size=shape).astype(str).astype(np.bytes_).astype(np.object_)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-1, 1, size=shape).astype(dtype)
    return rng.integers(0 if np.issubdtype(dtype, np.unsignedinteger) else -50, 50,
                        size=shape).astype(dtype)


def request_shape(config, tensor):
    """The shape a request sends: [rows] + dims when batching, -1 as
    VARIABLE_EXTENT."""
    dims = [VARIABLE_EXTENT if d == -1 else d for d in tensor.dims]
    return ([BATCH_ROWS] if config.max_batch_size > 0 else []) + dims


def model_shape(config, tensor, shape):
    """What the model sees of a request's tensor: its reshape, if any."""
    if not tensor.HasField("reshape"):
        return shape
    return ([shape[0]] if config.max_batch_size > 0 else []) + list(tensor.reshape.shape)


def sequence_controls(config, rows):
    """The control tensors Triton fills for a sequence's only request
    (start, end, ready, its correlation id)."""
    values = {
        model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_START: 1,
        model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_END: 1,
        model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_READY: 1,
        model_config_pb2.ModelSequenceBatching.Control.CONTROL_SEQUENCE_CORRID: SEQUENCE_ID,
    }
    controls = {}
    for control_input in config.sequence_batching.control_input:
        for control in control_input.control:
            data_type = ("TYPE_FP32" if control.fp32_false_true else
                         "TYPE_BOOL" if control.bool_false_true else
                         model_config_pb2.DataType.Name(control.data_type)
                         if control.data_type else "TYPE_INT32")
            controls[control_input.name] = np.full(
                [rows, 1], values[control.kind], dtype=DATATYPES[data_type][1])
    return controls


class Served:
    """One round's repository and server, and what its index says."""

    def __init__(self, models):
        self.models = models  # served name -> fixture
        self.root = os.path.join(gp.scratch_dir("handwritten_"), "models")
        os.makedirs(self.root)
        for served_as, name in models.items():
            write_model(self.root, served_as, name)
        self.server = gp.ServerProcess(SERVER_BINARY, self.root,
                                       ("--exit-on-error=false",)).start()
        client = grpcclient.InferenceServerClient(self.server.url)
        try:
            self.index = {m["name"]: m for m in
                          client.get_model_repository_index(as_json=True).get("models", [])}
        finally:
            client.close()


_rounds = []
_states = {}  # fixture -> (served round, served name, index entry)


def setUpModule():
    for models in rounds():
        served = Served(models)
        _rounds.append(served)
        for served_as, name in models.items():
            _states[name] = (served, served_as, served.index.get(served_as, {}))
    ready = sorted(name for name, (_, _, entry) in _states.items()
                   if entry.get("state") == "READY")
    print(f"\n{len(ready)} of {len(CONFIGS)} load", file=sys.stderr)
    for name in CONFIGS:
        entry = _states[name][2]
        if entry.get("state") != "READY":
            print(f"  {name}: {entry.get('state')}: {entry.get('reason')}", file=sys.stderr)


def tearDownModule():
    for served in _rounds:
        gp.stop_checked(served.server)


class TritonHandwrittenConfigsTest(unittest.TestCase):

    def test_every_config_has_a_stand_in_and_is_listed_once(self):
        self.assertGreaterEqual(len(CONFIGS), 25)
        self.assertEqual(set(STAND_INS), set(CONFIGS))
        self.assertEqual(LOADS | set(NOT_LOADED), set(CONFIGS))
        self.assertFalse(LOADS & set(NOT_LOADED))

    def test_the_configs_that_load_keep_loading(self):
        for name in sorted(LOADS):
            with self.subTest(name):
                entry = _states[name][2]
                self.assertEqual(entry.get("state"), "READY", entry)

    def test_the_others_are_refused_saying_why(self):
        for name, why in sorted(NOT_LOADED.items()):
            with self.subTest(name):
                entry = _states[name][2]
                if entry.get("state") == "READY":
                    print(f"{name} now loads: move it to LOADS", file=sys.stderr)
                    continue
                self.assertIn(why, entry.get("reason", ""), entry)

    def test_each_loaded_model_answers_like_onnxruntime(self):
        import onnxruntime  # only this test compares outputs

        for name in CONFIGS:
            served, served_as, entry = _states[name]
            if entry.get("state") != "READY":
                continue
            directory = os.path.join(served.root, served_as)
            reference = onnxruntime.InferenceSession(
                os.path.join(directory, "1", "model.onnx"), providers=["CPUExecutionProvider"])
            optional = any(tensor.optional for tensor in read_config(name).input)
            for send_optional in (True, False) if optional else (True,):
                with self.subTest(name, send_optional=send_optional):
                    self.check_answer(served, served_as, name, reference, send_optional)

    def check_answer(self, served, served_as, name, reference, send_optional):
        """One request of random data; the optional inputs sent or left to
        the model's defaults, as onnxruntime is fed them or not."""
        client = grpcclient.InferenceServerClient(served.server.url)
        try:
            config = read_config(name)
            if not config.input:
                # Nothing declared (Triton completes the config from the
                # model): the server's completed config says what to send.
                config = model_config_pb2.ModelConfig()
                text_format.Parse(text_format.MessageToString(
                    client.get_model_config(served_as).config), config)
            sequence = config.HasField("sequence_batching")
            rows = 1 if sequence else BATCH_ROWS  # a sequence's requests are single rows
            rng = np.random.default_rng(len(name))
            inputs, feeds = [], {}
            for tensor in config.input:
                if tensor.optional and not send_optional:
                    continue  # left to the model's default
                data_type = model_config_pb2.DataType.Name(tensor.data_type)
                shape = request_shape(config, tensor)
                if sequence and config.max_batch_size > 0:
                    shape[0] = rows
                data = random_tensor(rng, data_type, shape)
                infer_input = grpcclient.InferInput(tensor.name, shape, DATATYPES[data_type][0])
                infer_input.set_data_from_numpy(data)
                inputs.append(infer_input)
                if data.dtype == np.object_:  # onnxruntime reads str, the client sends bytes
                    data = np.vectorize(bytes.decode, otypes=[np.object_])(data)
                feeds[tensor.name] = data.reshape(model_shape(config, tensor, shape))
            if sequence:
                feeds.update(sequence_controls(config, rows))
                result = client.infer(served_as, inputs, sequence_id=SEQUENCE_ID,
                                      sequence_start=True, sequence_end=True)
            else:
                result = client.infer(served_as, inputs)
            names = [output.name for output in reference.get_outputs()]
            expected = dict(zip(names, reference.run(names, feeds)))
            for tensor in config.output:
                got = result.as_numpy(tensor.name)
                self.assertIsNotNone(got, f"no {tensor.name} in the answer")
                declared = ([rows] if config.max_batch_size > 0 else []) + list(tensor.dims)
                self.assertEqual(len(got.shape), len(declared), tensor.name)
                for extent, dim in zip(got.shape, declared):
                    self.assertIn(dim, (-1, extent), f"{tensor.name}: {got.shape} for {declared}")
                want = expected[tensor.name].reshape(got.shape)
                if want.dtype == np.object_:  # strings: tritonclient's bytes, onnxruntime's str
                    self.assertEqual([x.decode() for x in got.ravel()],
                                     [str(x) for x in want.ravel()], tensor.name)
                elif np.issubdtype(want.dtype, np.floating):
                    self.assertLessEqual(gp.relative_error(got, want), gp.RELATIVE_TOLERANCE,
                                         tensor.name)
                else:
                    np.testing.assert_array_equal(got, want, tensor.name)
        finally:
            client.close()


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
