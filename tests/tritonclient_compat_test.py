"""Triton's own Python gRPC client (tritonclient.grpc, pinned in
deploy/python_requirements.txt) against the real graphserve binary on the
host executor: every call a Triton user makes on a GRPCInferenceService,
with outputs compared to onnxruntime on the same model.onnx.

    bazel test //tests:tritonclient_compat_test \
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

Without GRAPHSERVE_PYTHON the test fails and says how to set it
(deploy/venv_test.sh).

A failing assertion whose message starts with "SERVER:" means graphserve
answered differently from what tritonclient expects of a Triton-compatible
server; the message names the request, what was expected and what came back.
"""

import sys
import threading
import unittest

import numpy as np
import tritonclient.grpc as grpcclient
from google.protobuf import unknown_fields
from tritonclient.grpc import model_config_pb2
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

# Per call: generous for 256 rows on a host executor sharing two cores with
# other tests, short enough that a hung server fails well within the test's
# Bazel timeout.
CALL_TIMEOUT_S = 30
# The batch sizes the brief asks for: one row, a size between captured ones
# (padded or split), a large odd size, and max_batch_size.
BATCHES = (1, 5, 100, 256)
# A name of 64 KiB: eight times the 8 KiB of status metadata a gRPC client
# accepts by default.
HUGE_TEXT = 64 << 10
# A one-line message, whatever the client sent.
MESSAGE_BOUND = 256
# ModelConfig.capture in proto/model_config.proto: GraphServe's extension,
# unknown to tritonclient's model_config_pb2.
CAPTURE_FIELD_NUMBER = 1000

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(SERVER_BINARY, MAKE_REPOSITORY)


def tearDownModule():
    gp.stop_checked(_server)


def make_inputs(model, batch, seed):
    arrays = gp.random_inputs(gp.DEMO_INPUTS[model], batch, seed)
    inputs = []
    for name, array in arrays.items():
        tensor = grpcclient.InferInput(name, list(array.shape), "FP32")
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return arrays, inputs


def requested_outputs(model):
    return [grpcclient.InferRequestedOutput(name) for name in gp.DEMO_OUTPUTS[model]]


class TritonClientCompatTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = grpcclient.InferenceServerClient(url=_server.url)
        cls.references = {model: gp.ReferenceModel(_repository, model)
                          for model in gp.DEMO_INPUTS}

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def assert_matches_reference(self, model, arrays, result, context):
        want = self.references[model].run(arrays)
        for name in gp.DEMO_OUTPUTS[model]:
            got = result.as_numpy(name)
            self.assertIsNotNone(got, f"SERVER: {context}: no output '{name}' in the response")
            self.assertEqual(got.dtype, np.float32, f"{context}: output '{name}'")
            self.assertEqual(got.shape, want[name].shape, f"{context}: output '{name}'")
            error = gp.relative_error(got, want[name])
            self.assertLessEqual(error, gp.RELATIVE_TOLERANCE,
                                 f"SERVER: {context}: output '{name}' differs from "
                                 f"onnxruntime, relative error {error:.3g}")

    def test_liveness_and_readiness(self):
        self.assertTrue(self.client.is_server_live(client_timeout=CALL_TIMEOUT_S))
        self.assertTrue(self.client.is_server_ready(client_timeout=CALL_TIMEOUT_S))
        for model in gp.DEMO_INPUTS:
            self.assertTrue(self.client.is_model_ready(model, client_timeout=CALL_TIMEOUT_S),
                            f"SERVER: ModelReady('{model}') is false")
        # Triton answers ready=false, not an error, for a model it does not have.
        self.assertFalse(self.client.is_model_ready("no_such_model",
                                                    client_timeout=CALL_TIMEOUT_S))

    def test_server_metadata(self):
        metadata = self.client.get_server_metadata(client_timeout=CALL_TIMEOUT_S)
        self.assertTrue(metadata.name, "SERVER: ServerMetadata has no name")
        self.assertTrue(metadata.version, "SERVER: ServerMetadata has no version")
        as_json = self.client.get_server_metadata(as_json=True, client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(as_json["name"], metadata.name)
        print(f"server metadata: {as_json}")

    def test_model_metadata(self):
        for model in gp.DEMO_INPUTS:
            with self.subTest(model=model):
                metadata = self.client.get_model_metadata(model, client_timeout=CALL_TIMEOUT_S)
                self.assertEqual(metadata.name, model)
                self.assertEqual(
                    {t.name: (t.datatype, list(t.shape)) for t in metadata.inputs},
                    {name: ("FP32", [-1, *dims]) for name, dims in gp.DEMO_INPUTS[model].items()})
                self.assertEqual(
                    {t.name: (t.datatype, list(t.shape)) for t in metadata.outputs},
                    {name: ("FP32", [-1, *dims]) for name, dims in gp.DEMO_OUTPUTS[model].items()})
                as_json = self.client.get_model_metadata(model, as_json=True,
                                                         client_timeout=CALL_TIMEOUT_S)
                # JSON int64 values are strings in protobuf's mapping.
                self.assertEqual([int(d) for d in as_json["inputs"][0]["shape"]],
                                 list(metadata.inputs[0].shape))
        with self.assertRaises(InferenceServerException) as raised:
            self.client.get_model_metadata("no_such_model", client_timeout=CALL_TIMEOUT_S)
        self.assertIn("NOT_FOUND", raised.exception.status())

    def test_model_config(self):
        for model in gp.DEMO_INPUTS:
            with self.subTest(model=model):
                response = self.client.get_model_config(model, client_timeout=CALL_TIMEOUT_S)
                config = response.config
                self.assertEqual(config.name, model)
                self.assertEqual(config.max_batch_size, gp.DEMO_MAX_BATCH)
                self.assertEqual(
                    {t.name: (t.data_type, list(t.dims)) for t in config.input},
                    {name: (model_config_pb2.TYPE_FP32, list(dims))
                     for name, dims in gp.DEMO_INPUTS[model].items()})
                self.assertEqual(
                    {t.name: (t.data_type, list(t.dims)) for t in config.output},
                    {name: (model_config_pb2.TYPE_FP32, list(dims))
                     for name, dims in gp.DEMO_OUTPUTS[model].items()})
                # The capture section reached the client and was kept aside as
                # an unknown field: parsing skipped it without harm.
                unknown = {field.field_number for field in unknown_fields.UnknownFieldSet(config)}
                self.assertIn(CAPTURE_FIELD_NUMBER, unknown,
                              "the capture section did not reach tritonclient, so this test "
                              "no longer checks that an unknown section is harmless")
                as_json = self.client.get_model_config(model, as_json=True,
                                                       client_timeout=CALL_TIMEOUT_S)
                self.assertEqual(as_json["config"]["max_batch_size"], gp.DEMO_MAX_BATCH)
                self.assertNotIn("capture", as_json["config"])

    def test_infer_matches_onnxruntime(self):
        for model in gp.DEMO_INPUTS:
            for batch in BATCHES:
                with self.subTest(model=model, batch=batch):
                    arrays, inputs = make_inputs(model, batch, seed=batch)
                    result = self.client.infer(model, inputs, outputs=requested_outputs(model),
                                               client_timeout=CALL_TIMEOUT_S)
                    self.assert_matches_reference(model, arrays, result,
                                                  f"infer {model} batch {batch}")
                    response = result.get_response()
                    self.assertEqual(response.model_name, model)
        # Without requested outputs the server returns all of them.
        arrays, inputs = make_inputs("dlrm_dense", 3, seed=3)
        result = self.client.infer("dlrm_dense", inputs, client_timeout=CALL_TIMEOUT_S)
        self.assert_matches_reference("dlrm_dense", arrays, result,
                                      "infer dlrm_dense batch 3, no outputs requested")

    def test_classification_is_the_top_of_the_unclassified_output(self):
        # Triton's classification extension through InferRequestedOutput's
        # class_count: a BYTES tensor of "<value>:<index>" per row (mlp's y
        # has one class a row, so 3 asked give 1), value printed as C's %f.
        arrays, inputs = make_inputs("mlp", 5, seed=55)
        values = self.client.infer("mlp", inputs, outputs=requested_outputs("mlp"),
                                   client_timeout=CALL_TIMEOUT_S).as_numpy("y")
        result = self.client.infer("mlp", inputs,
                                   outputs=[grpcclient.InferRequestedOutput("y", class_count=3)],
                                   client_timeout=CALL_TIMEOUT_S)
        output = result.get_output("y")
        self.assertEqual(output.datatype, "BYTES", "SERVER: a classified output is BYTES")
        want = np.array([[f"{float(v):.6f}:0".encode()] for v in values[:, 0]], dtype=object)
        np.testing.assert_array_equal(result.as_numpy("y"), want)

    def test_request_options(self):
        # What Triton clients commonly set: an id the response echoes, an
        # explicit version, and gRPC message compression, which graphserve
        # refuses unless started with --grpc-accept-compressed-requests (Note
        # [Compressed gRPC requests]; grpc_compressed_requests_test serves it).
        arrays, inputs = make_inputs("mlp", 3, seed=21)
        result = self.client.infer("mlp", inputs, model_version="1", request_id="req-42",
                                   client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(result.get_response().id, "req-42",
                         "SERVER: ModelInferResponse.id does not echo the request's id")
        self.assertEqual(result.get_response().model_version, "1")
        self.assert_matches_reference("mlp", arrays, result, "infer mlp version 1")
        for algorithm in ("gzip", "deflate"):
            with self.subTest(compression=algorithm):
                with self.assertRaises(grpcclient.InferenceServerException) as refused:
                    self.client.infer("mlp", inputs, compression_algorithm=algorithm,
                                      client_timeout=CALL_TIMEOUT_S)
                self.assertIn(f"Compression algorithm '{algorithm}' is disabled",
                              str(refused.exception))
        metadata = self.client.get_model_metadata("mlp", model_version="1",
                                                  client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(list(metadata.versions), ["1"])

    def test_inference_statistics(self):
        arrays, inputs = make_inputs("mlp", 3, seed=7)
        self.client.infer("mlp", inputs, client_timeout=CALL_TIMEOUT_S)
        statistics = self.client.get_inference_statistics("mlp", client_timeout=CALL_TIMEOUT_S)
        entries = [s for s in statistics.model_stats if s.name == "mlp"]
        self.assertEqual(len(entries), 1, f"ModelStatistics('mlp'): {statistics}")
        self.assertGreaterEqual(entries[0].inference_stats.success.count, 1)
        self.assertGreaterEqual(entries[0].inference_count, 3)
        everything = self.client.get_inference_statistics(client_timeout=CALL_TIMEOUT_S)
        self.assertTrue(set(gp.DEMO_INPUTS) <= {s.name for s in everything.model_stats},
                        f"ModelStatistics(all): {[s.name for s in everything.model_stats]}")
        as_json = self.client.get_inference_statistics("mlp", as_json=True,
                                                       client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(as_json["model_stats"][0]["name"], "mlp")

    def test_errors_keep_code_and_message(self):
        _, inputs = make_inputs("mlp", 2, seed=11)
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("no_such_model", inputs, client_timeout=CALL_TIMEOUT_S)
        self.assertIn("NOT_FOUND", raised.exception.status(),
                      f"SERVER: infer on an unknown model: {raised.exception}")
        self.assertIn("no_such_model", raised.exception.message())

        # 511 features where the model takes 512.
        wrong = grpcclient.InferInput("x", [2, 511], "FP32")
        wrong.set_data_from_numpy(np.zeros((2, 511), dtype=np.float32))
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("mlp", [wrong], client_timeout=CALL_TIMEOUT_S)
        self.assertIn("INVALID_ARGUMENT", raised.exception.status(),
                      f"SERVER: infer mlp with x [2,511]: {raised.exception}")
        self.assertRegex(raised.exception.message(), r"\[-1, ?512\]",
                         "SERVER: the message should name the expected shape")

        # One row past max_batch_size.
        _, too_many = make_inputs("mlp", gp.DEMO_MAX_BATCH + 1, seed=12)
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("mlp", too_many, client_timeout=CALL_TIMEOUT_S)
        self.assertIn("INVALID_ARGUMENT", raised.exception.status(), str(raised.exception))

        # A version the repository does not hold.
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("mlp", inputs, model_version="2", client_timeout=CALL_TIMEOUT_S)
        self.assertIn("NOT_FOUND", raised.exception.status(), str(raised.exception))

        # An output the model does not have; an input left out.
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("mlp", inputs, outputs=[grpcclient.InferRequestedOutput("nope")],
                              client_timeout=CALL_TIMEOUT_S)
        self.assertIn("INVALID_ARGUMENT", raised.exception.status(), str(raised.exception))
        _, dlrm_inputs = make_inputs("dlrm_dense", 2, seed=14)
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("dlrm_dense", dlrm_inputs[:1], client_timeout=CALL_TIMEOUT_S)
        self.assertIn("INVALID_ARGUMENT", raised.exception.status(), str(raised.exception))
        self.assertIn(dlrm_inputs[1].name(), raised.exception.message(),
                      "SERVER: the message should name the missing input")

        # FP64 where the model takes FP32.
        wrong = grpcclient.InferInput("x", [2, 512], "FP64")
        wrong.set_data_from_numpy(np.zeros((2, 512), dtype=np.float64))
        with self.assertRaises(InferenceServerException) as raised:
            self.client.infer("mlp", [wrong], client_timeout=CALL_TIMEOUT_S)
        self.assertIn("INVALID_ARGUMENT", raised.exception.status(), str(raised.exception))

        # The connection and the model are unharmed.
        arrays, inputs = make_inputs("mlp", 4, seed=13)
        result = self.client.infer("mlp", inputs, client_timeout=CALL_TIMEOUT_S)
        self.assert_matches_reference("mlp", arrays, result, "infer mlp batch 4 after errors")

    def test_common_errors_carry_tritons_code_and_text(self):
        """Scripts written for Triton match these leading texts and codes
        (Note [Triton's error texts] in server/model_registry.cc)."""
        arrays, inputs = make_inputs("dlrm_dense", 2, seed=21)
        renamed = grpcclient.InferInput("dense_typo", list(arrays["dense"].shape), "FP32")
        renamed.set_data_from_numpy(arrays["dense"])
        reshaped = grpcclient.InferInput("dense", [2, 3], "FP32")
        reshaped.set_data_from_numpy(np.zeros((2, 3), np.float32))
        retyped = grpcclient.InferInput("dense", list(arrays["dense"].shape), "FP64")
        retyped.set_data_from_numpy(arrays["dense"].astype(np.float64))
        dense_shape = list(arrays["dense"].shape)
        cases = [
            ("unknown model", lambda: self.client.infer("nope", inputs),
             "StatusCode.NOT_FOUND", "Request for unknown model: 'nope' is not found"),
            ("unknown version", lambda: self.client.infer("dlrm_dense", inputs, model_version="9"),
             "StatusCode.NOT_FOUND",
             "Request for unknown model: 'dlrm_dense' version 9 is not found"),
            ("metadata, unknown model", lambda: self.client.get_model_metadata("nope"),
             "StatusCode.NOT_FOUND", "Request for unknown model: 'nope' is not found"),
            ("version not a number", lambda: self.client.get_model_config("mlp", "one"),
             "StatusCode.INVALID_ARGUMENT",
             "failed to get model version from specified version string 'one'"),
            ("missing input", lambda: self.client.infer("dlrm_dense", inputs[:1], request_id="r1"),
             "StatusCode.INVALID_ARGUMENT",
             "[request id: r1] expected 2 inputs but got 1 inputs for model 'dlrm_dense'. "
             "Got input(s) ['dense'], but missing required input(s) ['sparse_emb']. "
             "Please provide all required input(s)."),
            ("wrong input name", lambda: self.client.infer("dlrm_dense", [renamed, inputs[1]]),
             "StatusCode.INVALID_ARGUMENT",
             "unexpected inference input 'dense_typo' for model 'dlrm_dense'"),
            ("wrong shape", lambda: self.client.infer("dlrm_dense", [reshaped, inputs[1]]),
             "StatusCode.INVALID_ARGUMENT",
             f"[request id: <id_unknown>] unexpected shape for input 'dense' for model "
             f"'dlrm_dense'. Expected [-1,{dense_shape[1]}], got [2,3]"),
            ("wrong datatype", lambda: self.client.infer("dlrm_dense", [retyped, inputs[1]]),
             "StatusCode.INVALID_ARGUMENT",
             "[request id: <id_unknown>] inference input 'dense' data-type is 'FP64', but model "
             "'dlrm_dense' expects 'FP32'"),
        ]
        for name, call, status, text in cases:
            with self.subTest(name):
                with self.assertRaises(InferenceServerException) as raised:
                    call()
                self.assertEqual(raised.exception.status(), status, raised.exception.message())
                self.assertTrue(raised.exception.message().startswith(text),
                                f"SERVER: {raised.exception.message()!r} should start with "
                                f"{text!r}")

    def test_huge_names_keep_their_code(self):
        # 64 KiB of client text in a name: quoted whole, the status message
        # would pass gRPC's 8 KiB metadata limit and tritonclient would report
        # RESOURCE_EXHAUSTED instead (Note [Quoting client text]).
        huge = "m" * HUGE_TEXT
        arrays, inputs = make_inputs("mlp", 2, seed=15)
        bad_input = grpcclient.InferInput(huge, [2, 512], "FP32")
        bad_input.set_data_from_numpy(arrays["x"])
        bad_datatype = grpcclient.InferInput("x", [2, 512], "FP32")
        bad_datatype.set_data_from_numpy(arrays["x"])
        # tritonclient checks the datatype against the array's, so it is
        # spoiled after the data is set.
        bad_datatype._input.datatype = huge
        calls = {
            "get_model_metadata, huge model name":
                (lambda: self.client.get_model_metadata(huge, client_timeout=CALL_TIMEOUT_S),
                 "NOT_FOUND"),
            "get_model_config, huge version":
                (lambda: self.client.get_model_config("mlp", model_version=huge,
                                                      client_timeout=CALL_TIMEOUT_S),
                 "INVALID_ARGUMENT"),
            "infer, huge model name":
                (lambda: self.client.infer(huge, inputs, client_timeout=CALL_TIMEOUT_S),
                 "NOT_FOUND"),
            "infer, huge input name":
                (lambda: self.client.infer("mlp", [bad_input], client_timeout=CALL_TIMEOUT_S),
                 "INVALID_ARGUMENT"),
            "infer, huge datatype":
                (lambda: self.client.infer("mlp", [bad_datatype], client_timeout=CALL_TIMEOUT_S),
                 "INVALID_ARGUMENT"),
            "infer, huge output name":
                (lambda: self.client.infer("mlp", inputs,
                                           outputs=[grpcclient.InferRequestedOutput(huge)],
                                           client_timeout=CALL_TIMEOUT_S),
                 "INVALID_ARGUMENT"),
        }
        for what, (call, code) in calls.items():
            with self.subTest(what):
                with self.assertRaises(InferenceServerException) as raised:
                    call()
                self.assertIn(code, raised.exception.status(),
                              f"SERVER: {what}: {str(raised.exception)[:300]}")
                self.assertLess(len(raised.exception.message()), MESSAGE_BOUND,
                                f"SERVER: {what}: the message quotes too much")
                self.assertIn(f"...' ({HUGE_TEXT} bytes)", raised.exception.message())

    def test_async_infer_concurrently(self):
        # Both models, several sizes, all in flight at once.
        requests = [(model, batch) for model in gp.DEMO_INPUTS for batch in (1, 7, 64, 256)]
        results = {}
        done = threading.Condition()

        def on_done(index, result, error):
            with done:
                results[index] = (result, error)
                done.notify_all()

        sent = []
        for index, (model, batch) in enumerate(requests):
            arrays, inputs = make_inputs(model, batch, seed=100 + index)
            sent.append(arrays)
            self.client.async_infer(
                model, inputs,
                callback=lambda result, error, index=index: on_done(index, result, error),
                outputs=requested_outputs(model), client_timeout=CALL_TIMEOUT_S)
        with done:
            self.assertTrue(done.wait_for(lambda: len(results) == len(requests),
                                          timeout=CALL_TIMEOUT_S + 10),
                            f"{len(requests) - len(results)} async requests never completed")
        for index, (model, batch) in enumerate(requests):
            result, error = results[index]
            self.assertIsNone(error, f"SERVER: async infer {model} batch {batch}: {error}")
            self.assert_matches_reference(model, sent[index], result,
                                          f"async infer {model} batch {batch}")

    def test_stream_infer(self):
        # tritonclient's streaming API (ModelStreamInfer): both models and
        # several sizes on one stream, a request for an unknown model among
        # them; each answer comes back by its request id, the error as an
        # exception to the callback, and the stream goes on after it.
        requests = [(model, batch) for model in gp.DEMO_INPUTS for batch in (1, 5, 100)]
        requests.insert(2, ("no_such_model", 1))
        results = {}
        errors = []
        done = threading.Condition()

        def on_answer(result, error):
            with done:
                if error is not None:
                    errors.append(error)
                else:
                    results[result.get_response().id] = result
                done.notify_all()

        client = grpcclient.InferenceServerClient(url=_server.url)
        sent = {}
        try:
            client.start_stream(callback=on_answer, stream_timeout=CALL_TIMEOUT_S)
            for index, (model, batch) in enumerate(requests):
                arrays, inputs = make_inputs("mlp" if model == "no_such_model" else model,
                                             batch, seed=400 + index)
                sent[str(index)] = (model, batch, arrays)
                client.async_stream_infer(model, inputs, request_id=str(index))
            with done:
                self.assertTrue(
                    done.wait_for(lambda: len(results) + len(errors) == len(requests),
                                  timeout=CALL_TIMEOUT_S + 10),
                    f"SERVER: {len(requests) - len(results) - len(errors)} streamed requests "
                    f"never answered")
        finally:
            client.stop_stream()
            client.close()
        self.assertEqual(len(errors), 1, f"SERVER: errors on the stream: {errors}")
        self.assertIn("no_such_model", errors[0].message())
        for request_id, (model, batch, arrays) in sent.items():
            if model == "no_such_model":
                continue
            self.assertIn(request_id, results,
                          f"SERVER: no answer with id {request_id} ({model} batch {batch})")
            self.assert_matches_reference(model, arrays, results[request_id],
                                          f"streamed {model} batch {batch}")


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
