"""Triton ensembles (Note [Ensembles] in server/ensemble_scheduler.h) against the
real graphserve binary on the host executor, with tritonclient as a Triton
user calls them.

The repository holds four small ONNX models written here with onnx's helper
and three ensembles over them:
- `pipeline` (a diamond): IN0, IN1 -> addsub (SUM = a + b, DIFF = a - b);
  SUM -> scale (SCALED = 2 x); DIFF -> negate (NEG = -x); (SCALED, NEG) ->
  mul (OUT = SCALED * NEG). Its outputs are OUT and SCALED, a tensor a later
  step reads too. scale and negate do not depend on each other.
- `chain` written as Triton also accepts it, with no platform: addsub then
  scale, not batching, over the batching models (its [2, 4] tensors are two
  rows for them).
- `too_wide`: not batching, six rows for `scale4`, which takes four at most:
  the step fails, and the client hears which model refused.
Every answer is checked against numpy, over gRPC, HTTP JSON and HTTP binary,
and with outputs in system shared memory; then the statistics, and model
control (loading an ensemble loads its models; unloading one makes the
ensemble not ready).
"""

import os
import sys
import threading
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

SERVER_BINARY = MAKE_REPOSITORY = None
CALL_TIMEOUT_S = 30
# ONNX files as small and plain as graphserve imports: IR 7, opset 13.
OPSET = 13
WIDTH = 4  # the elements of every tensor's row
MAX_BATCH = 8

_server = None
_repository = None


def save(name, nodes, inputs, outputs, config, initializers=()):
    directory = os.path.join(_repository, name)
    os.makedirs(os.path.join(directory, "1"))
    value = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", WIDTH])
    graph = helper.make_graph(nodes, name, [value(n) for n in inputs],
                              [value(n) for n in outputs], initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(directory, "1", "model.onnx"))
    write_config(name, config)


def write_config(name, text):
    os.makedirs(os.path.join(_repository, name, "1"), exist_ok=True)  # an ensemble's is empty
    with open(os.path.join(_repository, name, "config.pbtxt"), "w") as f:
        f.write(text)


def tensors(kind, names):
    rows = ", ".join(f'{{ name: "{n}" data_type: TYPE_FP32 dims: [ {WIDTH} ] }}' for n in names)
    return f"{kind} [ {rows} ]\n"


def onnx_config(name, inputs, outputs, max_batch=MAX_BATCH):
    return (f'name: "{name}"\nplatform: "onnxruntime_onnx"\nmax_batch_size: {max_batch}\n'
            + tensors("input", inputs) + tensors("output", outputs)
            + "dynamic_batching { }\n")


def write_repository():
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    save("addsub", [helper.make_node("Add", ["A", "B"], ["SUM"]),
                    helper.make_node("Sub", ["A", "B"], ["DIFF"])],
         ["A", "B"], ["SUM", "DIFF"], onnx_config("addsub", ["A", "B"], ["SUM", "DIFF"]))
    save("scale", [helper.make_node("Mul", ["X", "two"], ["Y"])], ["X"], ["Y"],
         onnx_config("scale", ["X"], ["Y"]), [two])
    save("scale4", [helper.make_node("Mul", ["X", "two"], ["Y"])], ["X"], ["Y"],
         onnx_config("scale4", ["X"], ["Y"], max_batch=4), [two])
    save("negate", [helper.make_node("Neg", ["X"], ["Y"])], ["X"], ["Y"],
         onnx_config("negate", ["X"], ["Y"]))
    save("mul", [helper.make_node("Mul", ["A", "B"], ["Y"])], ["A", "B"], ["Y"],
         onnx_config("mul", ["A", "B"], ["Y"]))
    write_config("pipeline", f"""
        name: "pipeline"
        platform: "ensemble"
        max_batch_size: {MAX_BATCH}
        {tensors("input", ["IN0", "IN1"])}
        {tensors("output", ["OUT", "SCALED"])}
        ensemble_scheduling {{ step [
          {{ model_name: "mul" model_version: -1
             input_map {{ key: "A" value: "SCALED" }} input_map {{ key: "B" value: "NEG" }}
             output_map {{ key: "Y" value: "OUT" }} }},
          {{ model_name: "scale" model_version: 1
             input_map {{ key: "X" value: "SUM" }} output_map {{ key: "Y" value: "SCALED" }} }},
          {{ model_name: "negate" model_version: -1
             input_map {{ key: "X" value: "DIFF" }} output_map {{ key: "Y" value: "NEG" }} }},
          {{ model_name: "addsub" model_version: -1
             input_map {{ key: "A" value: "IN0" }} input_map {{ key: "B" value: "IN1" }}
             output_map {{ key: "SUM" value: "SUM" }} output_map {{ key: "DIFF" value: "DIFF" }} }}
        ] }}
        """)
    write_config("chain", f"""
        max_batch_size: 0
        input [ {{ name: "IN0" data_type: TYPE_FP32 dims: [ 2, {WIDTH} ] }},
                {{ name: "IN1" data_type: TYPE_FP32 dims: [ 2, {WIDTH} ] }} ]
        output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 2, {WIDTH} ] }} ]
        ensemble_scheduling {{ step [
          {{ model_name: "addsub" model_version: -1
             input_map {{ key: "A" value: "IN0" }} input_map {{ key: "B" value: "IN1" }}
             output_map {{ key: "SUM" value: "S" }} }},
          {{ model_name: "scale" model_version: -1
             input_map {{ key: "X" value: "S" }} output_map {{ key: "Y" value: "OUT" }} }}
        ] }}
        """)
    write_config("too_wide", f"""
        name: "too_wide"
        platform: "ensemble"
        max_batch_size: 0
        input [ {{ name: "IN" data_type: TYPE_FP32 dims: [ 6, {WIDTH} ] }} ]
        output [ {{ name: "OUT" data_type: TYPE_FP32 dims: [ 6, {WIDTH} ] }} ]
        ensemble_scheduling {{ step [
          {{ model_name: "scale4" model_version: -1
             input_map {{ key: "X" value: "IN" }} output_map {{ key: "Y" value: "OUT" }} }}
        ] }}
        """)


def pipeline_reference(a, b):
    scaled = 2 * (a + b)
    return scaled * -(a - b), scaled


def rows(batch, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((batch, WIDTH)).astype(np.float32),
            rng.standard_normal((batch, WIDTH)).astype(np.float32))


def setUpModule():
    global _server, _repository
    _repository = os.path.join(gp.scratch_dir("ensemble_"), "models")
    os.makedirs(_repository)
    write_repository()
    _server = gp.ServerProcess(SERVER_BINARY, _repository).start()


def tearDownModule():
    gp.stop_checked(_server)


def grpc_inputs(module, a, b):
    inputs = [module.InferInput("IN0", list(a.shape), "FP32"),
              module.InferInput("IN1", list(b.shape), "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


class EnsembleTest(unittest.TestCase):

    def setUp(self):
        self.grpc = grpcclient.InferenceServerClient(_server.url)
        self.http = httpclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")

    def tearDown(self):
        self.grpc.close()
        self.http.close()

    def test_every_ensemble_is_ready_as_an_ensemble(self):
        for name in ("pipeline", "chain", "too_wide"):
            with self.subTest(name):
                self.assertTrue(self.grpc.is_model_ready(name), _server.output())
                self.assertEqual(self.grpc.get_model_metadata(name).platform, "ensemble")
                self.assertEqual(self.http.get_model_metadata(name)["platform"], "ensemble")
                self.assertEqual(self.grpc.get_model_config(name).config.platform, "ensemble")
        index = {m.name: m for m in self.grpc.get_model_repository_index().models}
        self.assertEqual(index["pipeline"].state, "READY")
        metadata = self.grpc.get_model_metadata("pipeline")
        self.assertEqual([t.name for t in metadata.inputs], ["IN0", "IN1"])
        self.assertEqual(list(metadata.outputs[0].shape), [-1, WIDTH])

    def test_the_diamond_answers_as_numpy_over_grpc(self):
        for batch in (1, 3, MAX_BATCH):
            with self.subTest(batch=batch):
                a, b = rows(batch, seed=batch)
                result = self.grpc.infer("pipeline", grpc_inputs(grpcclient, a, b),
                                         client_timeout=CALL_TIMEOUT_S)
                out, scaled = pipeline_reference(a, b)
                np.testing.assert_allclose(result.as_numpy("OUT"), out, rtol=1e-6)
                np.testing.assert_allclose(result.as_numpy("SCALED"), scaled, rtol=1e-6)
                self.assertEqual(result.get_response().model_name, "pipeline")

    def test_concurrent_clients_each_get_their_own_rows(self):
        # Requests of several clients meet in the composing models' queues
        # (dynamic batching merges them); each answer must still be its own.
        clients, requests = 6, 15  # more clients than the host's cores
        failures = []

        def run(worker):
            client = grpcclient.InferenceServerClient(_server.url)
            try:
                for i in range(requests):
                    batch = 1 + (worker + i) % MAX_BATCH
                    a, b = rows(batch, seed=1000 * worker + i)
                    result = client.infer("pipeline", grpc_inputs(grpcclient, a, b),
                                          client_timeout=CALL_TIMEOUT_S)
                    out, scaled = pipeline_reference(a, b)
                    if not (np.allclose(result.as_numpy("OUT"), out, rtol=1e-6) and
                            np.allclose(result.as_numpy("SCALED"), scaled, rtol=1e-6)):
                        failures.append(f"client {worker} request {i} (batch {batch})")
            except Exception as error:  # reported below, with the others
                failures.append(f"client {worker}: {error}")
            finally:
                client.close()

        threads = [threading.Thread(target=run, args=(w,)) for w in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=2 * CALL_TIMEOUT_S)
        self.assertFalse(any(t.is_alive() for t in threads), "a client hung")
        self.assertEqual(failures, [])

    def test_one_output_asked_for_is_the_only_one_returned(self):
        a, b = rows(2, seed=7)
        result = self.grpc.infer("pipeline", grpc_inputs(grpcclient, a, b),
                                 outputs=[grpcclient.InferRequestedOutput("SCALED")],
                                 client_timeout=CALL_TIMEOUT_S)
        self.assertIsNone(result.as_numpy("OUT"))
        np.testing.assert_allclose(result.as_numpy("SCALED"), 2 * (a + b), rtol=1e-6)

    def test_the_diamond_answers_as_numpy_over_http_json_and_binary(self):
        a, b = rows(5, seed=11)
        out, scaled = pipeline_reference(a, b)
        for binary in (False, True):
            with self.subTest(binary=binary):
                inputs = [httpclient.InferInput("IN0", list(a.shape), "FP32"),
                          httpclient.InferInput("IN1", list(b.shape), "FP32")]
                inputs[0].set_data_from_numpy(a, binary_data=binary)
                inputs[1].set_data_from_numpy(b, binary_data=binary)
                outputs = [httpclient.InferRequestedOutput("OUT", binary_data=binary),
                           httpclient.InferRequestedOutput("SCALED", binary_data=binary)]
                result = self.http.infer("pipeline", inputs, outputs=outputs)
                np.testing.assert_allclose(result.as_numpy("OUT"), out, rtol=1e-6)
                np.testing.assert_allclose(result.as_numpy("SCALED"), scaled, rtol=1e-6)

    def test_a_backendless_ensemble_that_does_not_batch_runs_its_rows_through_batching_models(self):
        a, b = rows(2, seed=3)
        inputs = grpc_inputs(grpcclient, a, b)
        result = self.grpc.infer("chain", inputs, client_timeout=CALL_TIMEOUT_S)
        np.testing.assert_allclose(result.as_numpy("OUT"), 2 * (a + b), rtol=1e-6)
        self.assertEqual(list(result.as_numpy("OUT").shape), [2, WIDTH])

    def test_outputs_in_system_shared_memory(self):
        batch = 3
        a, b = rows(batch, seed=5)
        out, scaled = pipeline_reference(a, b)
        nbytes = out.nbytes
        key = f"/graphserve_ensemble_{os.getpid()}"
        handle = shm.create_shared_memory_region("ensemble_out", key, 2 * nbytes)
        try:
            for client, module in ((self.grpc, grpcclient), (self.http, httpclient)):
                with self.subTest(module.__name__):
                    client.unregister_system_shared_memory()
                    client.register_system_shared_memory("ensemble_out", key, 2 * nbytes)
                    shm.set_shared_memory_region(handle, [np.zeros((2 * batch, WIDTH), np.float32)])
                    outputs = [module.InferRequestedOutput("OUT"),
                               module.InferRequestedOutput("SCALED")]
                    outputs[0].set_shared_memory("ensemble_out", nbytes)
                    outputs[1].set_shared_memory("ensemble_out", nbytes, offset=nbytes)
                    result = client.infer("pipeline", grpc_inputs(module, a, b), outputs=outputs)
                    got = shm.get_contents_as_numpy(handle, np.float32, [2 * batch, WIDTH])
                    np.testing.assert_allclose(got[:batch], out, rtol=1e-6)
                    np.testing.assert_allclose(got[batch:], scaled, rtol=1e-6)
                    self.assertIsNotNone(result.get_output("OUT"))
                    client.unregister_system_shared_memory()
        finally:
            shm.destroy_shared_memory_region(handle)

    def test_a_steps_error_names_the_steps_model(self):
        x = np.ones((6, WIDTH), np.float32)
        inputs = [grpcclient.InferInput("IN", [6, WIDTH], "FP32")]
        inputs[0].set_data_from_numpy(x)
        with self.assertRaises(InferenceServerException) as raised:
            self.grpc.infer("too_wide", inputs, client_timeout=CALL_TIMEOUT_S)
        message = raised.exception.message()
        self.assertIn("scale4", message)
        self.assertIn("batch-size must be <= 4", message)
        self.assertEqual(raised.exception.status(), "StatusCode.INVALID_ARGUMENT")
        # The ensemble's own checks come first, in Triton's words.
        bad = [grpcclient.InferInput("IN", [5, WIDTH], "FP32")]
        bad[0].set_data_from_numpy(np.ones((5, WIDTH), np.float32))
        with self.assertRaises(InferenceServerException) as raised:
            self.grpc.infer("too_wide", bad, client_timeout=CALL_TIMEOUT_S)
        self.assertIn("unexpected shape for input 'IN' for model 'too_wide'",
                      raised.exception.message())

    def test_statistics_count_the_ensemble_and_each_step(self):
        def stats(name):
            return self.grpc.get_inference_statistics(name).model_stats[0]

        before = {name: stats(name) for name in ("pipeline", "addsub", "scale", "mul")}
        batches = (2, 3, 1)
        for i, batch in enumerate(batches):
            a, b = rows(batch, seed=100 + i)
            self.grpc.infer("pipeline", grpc_inputs(grpcclient, a, b),
                            client_timeout=CALL_TIMEOUT_S)
        after = {name: stats(name) for name in before}
        ensemble, first = after["pipeline"], before["pipeline"]
        self.assertEqual(ensemble.inference_count - first.inference_count, sum(batches))
        self.assertEqual(ensemble.execution_count - first.execution_count, len(batches))
        self.assertEqual(ensemble.inference_stats.success.count -
                         first.inference_stats.success.count, len(batches))
        # Its compute is its steps': at least the time they report.
        steps_infer_ns = sum(after[m].inference_stats.compute_infer.ns -
                             before[m].inference_stats.compute_infer.ns
                             for m in ("addsub", "scale", "mul"))
        self.assertGreaterEqual(ensemble.inference_stats.compute_infer.ns -
                                first.inference_stats.compute_infer.ns, steps_infer_ns)
        self.assertGreaterEqual(ensemble.inference_stats.success.ns -
                                first.inference_stats.success.ns,
                                ensemble.inference_stats.queue.ns - first.inference_stats.queue.ns)
        self.assertIn(3, [s.batch_size for s in ensemble.batch_stats])
        for name in ("addsub", "scale", "mul"):
            with self.subTest(name):
                self.assertEqual(after[name].inference_count - before[name].inference_count,
                                 sum(batches))
                self.assertEqual(after[name].inference_stats.success.count -
                                 before[name].inference_stats.success.count, len(batches))
        # A failed step fails the ensemble's request, counted as such.
        failed = stats("too_wide").inference_stats.fail.count
        inputs = [grpcclient.InferInput("IN", [6, WIDTH], "FP32")]
        inputs[0].set_data_from_numpy(np.ones((6, WIDTH), np.float32))
        with self.assertRaises(InferenceServerException):
            self.grpc.infer("too_wide", inputs, client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(stats("too_wide").inference_stats.fail.count, failed + 1)


class EnsembleModelControlTest(unittest.TestCase):
    """--model-control-mode=explicit: the ensemble brings its models."""

    def test_loading_an_ensemble_loads_its_models_and_unloading_one_unreadies_it(self):
        flags = ("--model-control-mode", "explicit", "--load-model", "pipeline")
        with gp.ServerProcess(SERVER_BINARY, _repository, flags) as server:
            client = grpcclient.InferenceServerClient(server.url)
            try:
                for name in ("pipeline", "addsub", "scale", "negate", "mul"):
                    self.assertTrue(client.is_model_ready(name), f"{name}\n{server.output()}")
                self.assertFalse(client.is_model_ready("scale4"))
                # Loaded on request, with its model.
                client.load_model("too_wide")
                self.assertTrue(client.is_model_ready("too_wide"), server.output())
                self.assertTrue(client.is_model_ready("scale4"))

                client.unload_model("negate")
                self.assertFalse(client.is_model_ready("pipeline"))
                index = {m.name: m for m in client.get_model_repository_index().models}
                self.assertEqual(index["pipeline"].state, "UNAVAILABLE")
                self.assertIn("negate", index["pipeline"].reason)
                a, b = rows(2, seed=1)
                with self.assertRaises(InferenceServerException) as raised:
                    client.infer("pipeline", grpc_inputs(grpcclient, a, b),
                                 client_timeout=CALL_TIMEOUT_S)
                self.assertIn("negate", raised.exception.message())

                client.load_model("negate")
                self.assertTrue(client.is_model_ready("pipeline"))
                result = client.infer("pipeline", grpc_inputs(grpcclient, a, b),
                                      client_timeout=CALL_TIMEOUT_S)
                np.testing.assert_allclose(result.as_numpy("OUT"), pipeline_reference(a, b)[0],
                                           rtol=1e-6)
            finally:
                client.close()


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
