"""Triton's system shared-memory extension against the real graphserve binary
on the host executor, through tritonclient's own helpers
(tritonclient.utils.shared_memory) over gRPC and HTTP/REST: register regions,
infer with inputs and outputs in them, compare with the same inference sent as
bytes and with onnxruntime, list and unregister them, and every bad region
answered INVALID_ARGUMENT (or Triton's code for it) naming the region while the
server keeps serving.

    bazel test //tests:shared_memory_compat_test \\
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

A failing assertion whose message starts with "SERVER:" means graphserve
answered differently from what a Triton client expects.
"""

import base64
import sys
import threading
import unittest
import urllib.error
import urllib.request
import uuid

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

# Per call: generous for a host executor sharing two cores with other tests.
CALL_TIMEOUT_S = 30
# dlrm_dense's rows per request: not a power of two, so the rows are padded
# or split on their way through the captured sizes.
ROWS = 5
# How far past a page boundary the output region starts in its object: the
# server's mapping cannot start at the client's offset.
OUTPUT_MISALIGNMENT = 24
PAGE = 4096
# Spare bytes in every object, so that "too small" is the region's range,
# not the object's end.
SLACK = 8192

# --shared-memory-max-regions for this server: above what any test registers
# at once, low enough to reach (Note [Shared memory region limit]).
MAX_REGIONS = 12

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None
_repository = None


def setUpModule():
    global _server, _repository
    _server, _repository = gp.start_demo_server(
        SERVER_BINARY, MAKE_REPOSITORY, (f"--shared-memory-max-regions={MAX_REGIONS}",))


def tearDownModule():
    gp.stop_checked(_server)


# Keys of this run alone: an object a killed run left in /dev/shm (the
# sandbox's pids repeat) must not be picked up again with its old size.
_RUN = uuid.uuid4().hex[:8]


def shm_key(name):
    """A POSIX shared memory key of this test run alone."""
    return f"/graphserve_test_{_RUN}_{name}"


def dlrm_arrays(rows, seed):
    return gp.random_inputs(gp.DEMO_INPUTS["dlrm_dense"], rows, seed)


class SharedMemoryObject:
    """One client-side object holding dlrm_dense's two inputs back to back
    (dense at 0, sparse_emb right after) and room for the output at
    output_offset, past the inputs; destroyed (unlinked) on exit."""

    def __init__(self, name, arrays):
        self.arrays = arrays
        self.dense_bytes = arrays["dense"].nbytes
        self.sparse_bytes = arrays["sparse_emb"].nbytes
        self.output_bytes = len(arrays["dense"]) * 4  # prob [rows, 1] FP32
        input_pages = -(-(self.dense_bytes + self.sparse_bytes) // PAGE)
        self.output_offset = input_pages * PAGE + OUTPUT_MISALIGNMENT
        self.object_bytes = self.output_offset + self.output_bytes + SLACK
        self.key = shm_key(name)
        self.handle = shm.create_shared_memory_region(name, self.key, self.object_bytes,
                                                      create_only=True)
        try:
            shm.set_shared_memory_region(self.handle, [arrays["dense"], arrays["sparse_emb"]])
        except BaseException:
            shm.destroy_shared_memory_region(self.handle)
            raise

    def output(self):
        return shm.get_contents_as_numpy(self.handle, np.float32, [len(self.arrays["dense"]), 1],
                                         offset=self.output_offset)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shm.destroy_shared_memory_region(self.handle)
        return False


class GrpcSharedMemoryTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = grpcclient.InferenceServerClient(url=_server.url)
        cls.reference = gp.ReferenceModel(_repository, "dlrm_dense")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def tearDown(self):
        self.client.unregister_system_shared_memory(client_timeout=CALL_TIMEOUT_S)

    def register(self, name, key, byte_size, offset=0):
        self.client.register_system_shared_memory(name, key, byte_size, offset=offset,
                                                  client_timeout=CALL_TIMEOUT_S)

    def register_object(self, obj, prefix):
        """Regions <prefix>_in (both inputs) and <prefix>_out (the output)."""
        self.register(f"{prefix}_in", obj.key, obj.dense_bytes + obj.sparse_bytes)
        self.register(f"{prefix}_out", obj.key, obj.output_bytes, offset=obj.output_offset)

    def shm_inputs(self, obj, region):
        dense = grpcclient.InferInput("dense", list(obj.arrays["dense"].shape), "FP32")
        dense.set_shared_memory(region, obj.dense_bytes)
        sparse = grpcclient.InferInput("sparse_emb", list(obj.arrays["sparse_emb"].shape), "FP32")
        sparse.set_shared_memory(region, obj.sparse_bytes, offset=obj.dense_bytes)
        return [dense, sparse]

    def shm_output(self, obj, region, byte_size=None):
        output = grpcclient.InferRequestedOutput("prob")
        output.set_shared_memory(region, obj.output_bytes if byte_size is None else byte_size)
        return output

    def infer_bytes(self, arrays):
        inputs = []
        for name, array in arrays.items():
            tensor = grpcclient.InferInput(name, list(array.shape), "FP32")
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        result = self.client.infer("dlrm_dense", inputs, client_timeout=CALL_TIMEOUT_S)
        return result.as_numpy("prob")

    def assert_still_serves(self, context):
        arrays = dlrm_arrays(2, seed=99)
        got = self.infer_bytes(arrays)
        self.assertLessEqual(gp.relative_error(got, self.reference.run(arrays)["prob"]),
                             gp.RELATIVE_TOLERANCE, f"SERVER: after {context}")

    def test_extension_is_listed(self):
        metadata = self.client.get_server_metadata(client_timeout=CALL_TIMEOUT_S)
        self.assertIn("system_shared_memory", metadata.extensions)
        self.assertIn("cuda_shared_memory", metadata.extensions)

    def test_infer_through_shared_memory_equals_infer_with_bytes(self):
        arrays = dlrm_arrays(ROWS, seed=1)
        with SharedMemoryObject("grpc_main", arrays) as obj:
            self.register_object(obj, "main")
            result = self.client.infer("dlrm_dense", self.shm_inputs(obj, "main_in"),
                                       outputs=[self.shm_output(obj, "main_out")],
                                       client_timeout=CALL_TIMEOUT_S)
            # As Triton answers: the output's metadata, no data.
            output = result.get_output("prob")
            self.assertEqual(list(output.shape), [ROWS, 1])
            self.assertEqual(output.parameters["shared_memory_region"].string_param, "main_out")
            self.assertEqual(len(result.get_response().raw_output_contents[0]), 0)
            got = obj.output()
            want = self.infer_bytes(arrays)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=0,
                                       err_msg="SERVER: shared memory and bytes differ")
            self.assertLessEqual(gp.relative_error(got, self.reference.run(arrays)["prob"]),
                                 gp.RELATIVE_TOLERANCE)

            # One input from the region, the other sent as bytes; the output
            # comes back in the response.
            dense = self.shm_inputs(obj, "main_in")[0]
            sparse = grpcclient.InferInput("sparse_emb", list(arrays["sparse_emb"].shape), "FP32")
            sparse.set_data_from_numpy(arrays["sparse_emb"])
            result = self.client.infer("dlrm_dense", [sparse, dense],
                                       client_timeout=CALL_TIMEOUT_S)
            np.testing.assert_allclose(result.as_numpy("prob"), want, rtol=1e-6, atol=0)

    def test_status_lists_regions_and_unregister_forgets_them(self):
        arrays = dlrm_arrays(ROWS, seed=2)
        with SharedMemoryObject("grpc_status", arrays) as obj:
            self.register_object(obj, "listed")
            status = self.client.get_system_shared_memory_status(client_timeout=CALL_TIMEOUT_S)
            regions = {name: region for name, region in status.regions.items()}
            self.assertEqual(sorted(regions), ["listed_in", "listed_out"])
            self.assertEqual(regions["listed_out"].key, obj.key)
            self.assertEqual(regions["listed_out"].offset, obj.output_offset)
            self.assertEqual(regions["listed_out"].byte_size, obj.output_bytes)
            one = self.client.get_system_shared_memory_status("listed_in",
                                                              client_timeout=CALL_TIMEOUT_S)
            self.assertEqual(list(one.regions), ["listed_in"])

            self.client.unregister_system_shared_memory("listed_in",
                                                         client_timeout=CALL_TIMEOUT_S)
            with self.assertRaises(InferenceServerException) as raised:
                self.client.get_system_shared_memory_status("listed_in",
                                                            client_timeout=CALL_TIMEOUT_S)
            self.assertIn("NOT_FOUND", raised.exception.status())
            with self.assertRaises(InferenceServerException) as raised:
                self.client.infer("dlrm_dense", self.shm_inputs(obj, "listed_in"),
                                  client_timeout=CALL_TIMEOUT_S)
            self.assertIn("INVALID_ARGUMENT", raised.exception.status())
            self.assertIn("'listed_in' is not registered", raised.exception.message())
            # Unregistering what is not registered is no error, as in Triton.
            self.client.unregister_system_shared_memory("listed_in",
                                                         client_timeout=CALL_TIMEOUT_S)
            self.client.unregister_system_shared_memory(client_timeout=CALL_TIMEOUT_S)
            status = self.client.get_system_shared_memory_status(client_timeout=CALL_TIMEOUT_S)
            self.assertEqual(len(status.regions), 0)

    def test_bad_regions_answer_invalid_argument_naming_the_region(self):
        arrays = dlrm_arrays(ROWS, seed=3)
        with SharedMemoryObject("grpc_bad", arrays) as obj:
            self.register_object(obj, "bad")
            # A region one byte short of the two inputs.
            self.register("bad_short", obj.key, obj.dense_bytes + obj.sparse_bytes - 1)

            def inputs_with(**changes):
                inputs = self.shm_inputs(obj, changes.get("region", "bad_in"))
                if "sparse" in changes:
                    region, byte_size, offset = changes["sparse"]
                    inputs[1].set_shared_memory(region, byte_size, offset=offset)
                return inputs

            cases = [
                ("unknown region", inputs_with(region="never_registered"), None,
                 "'never_registered' is not registered"),
                ("offset out of the region's range",
                 inputs_with(sparse=("bad_in", obj.sparse_bytes, obj.dense_bytes + 4)), None,
                 "runs past the"),
                ("region too small for the input",
                 inputs_with(region="bad_short"), None, "region 'bad_short'"),
                ("byte_size not the shape's",
                 inputs_with(sparse=("bad_in", obj.sparse_bytes - 4, obj.dense_bytes)), None,
                 f"expected {obj.sparse_bytes}"),
                ("output region too small", inputs_with(),
                 self.shm_output(obj, "bad_out", byte_size=obj.output_bytes - 4),
                 "region 'bad_out' cannot hold"),
                ("output region unknown", inputs_with(), self.shm_output(obj, "nope_out"),
                 "'nope_out' is not registered"),
            ]
            for what, inputs, output, expected in cases:
                with self.subTest(what):
                    with self.assertRaises(InferenceServerException) as raised:
                        self.client.infer("dlrm_dense", inputs,
                                          outputs=None if output is None else [output],
                                          client_timeout=CALL_TIMEOUT_S)
                    self.assertIn("INVALID_ARGUMENT", raised.exception.status(),
                                  f"SERVER: {what}: {raised.exception}")
                    self.assertIn(expected, raised.exception.message(), f"SERVER: {what}")
                    self.assert_still_serves(what)

            # Registration errors, Triton's codes.
            with self.assertRaises(InferenceServerException) as raised:
                self.register("bad_in", obj.key, 16)
            self.assertIn("ALREADY_EXISTS", raised.exception.status())
            self.assertIn("'bad_in'", raised.exception.message())
            with self.assertRaises(InferenceServerException) as raised:
                self.register("missing", shm_key("no_such_object"), 16)
            self.assertIn("NOT_FOUND", raised.exception.status())
            self.assertIn("No such file or directory", raised.exception.message())
            with self.assertRaises(InferenceServerException) as raised:
                self.register("too_big", obj.key, obj.object_bytes + 1)
            self.assertIn("INVALID_ARGUMENT", raised.exception.status())
            self.assertIn("'too_big'", raised.exception.message())
            self.assert_still_serves("bad registrations")

    def test_regions_past_the_limit_are_resource_exhausted(self):
        with SharedMemoryObject("grpc_limit", dlrm_arrays(ROWS, seed=4)) as obj:
            for i in range(MAX_REGIONS):
                self.register(f"limit_{i}", obj.key, 64)
            with self.assertRaises(InferenceServerException) as raised:
                self.register("one_more", obj.key, 64)
            self.assertIn("RESOURCE_EXHAUSTED", raised.exception.status())
            self.assertIn("--shared-memory-max-regions", raised.exception.message())
            self.client.unregister_system_shared_memory("limit_0", client_timeout=CALL_TIMEOUT_S)
            self.register("one_more", obj.key, 64)
            self.assert_still_serves("the region limit")

    def test_a_shrunk_object_is_refused_and_the_server_lives(self):
        # Note [Truncated shared memory]: before, the server died of SIGBUS.
        arrays = dlrm_arrays(ROWS, seed=5)
        with SharedMemoryObject("grpc_shrunk", arrays) as obj:
            self.register_object(obj, "shrunk")
            self.client.infer("dlrm_dense", self.shm_inputs(obj, "shrunk_in"),
                              outputs=[self.shm_output(obj, "shrunk_out")],
                              client_timeout=CALL_TIMEOUT_S)
            with open("/dev/shm/" + obj.key.lstrip("/"), "r+b") as f:
                f.truncate(0)
            with self.assertRaises(InferenceServerException) as raised:
                self.client.infer("dlrm_dense", self.shm_inputs(obj, "shrunk_in"),
                                  outputs=[self.shm_output(obj, "shrunk_out")],
                                  client_timeout=CALL_TIMEOUT_S)
            self.assertIn("INVALID_ARGUMENT", raised.exception.status())
            self.assertIn("shrank after it was registered", raised.exception.message())
            self.assert_still_serves("a shrunk object")

    def test_unregister_during_requests_never_breaks_them(self):
        # Note [Shared memory lifetime]: a request that validated keeps its
        # regions mapped through an Unregister. Which of the two the server
        # sees first is up to the threads; either order must end well.
        rows = gp.DEMO_MAX_BATCH
        arrays = dlrm_arrays(rows, seed=4)
        want = self.infer_bytes(arrays)
        answered = {"OK": 0, "not registered": 0}
        with SharedMemoryObject("grpc_race", arrays) as obj:
            for attempt in range(8):
                self.register_object(obj, "race")
                outcome = {}
                finished = threading.Event()

                def on_done(result, error, outcome=outcome, finished=finished):
                    outcome["result"], outcome["error"] = result, error
                    finished.set()

                self.client.async_infer("dlrm_dense", self.shm_inputs(obj, "race_in"),
                                        callback=on_done,
                                        outputs=[self.shm_output(obj, "race_out")],
                                        client_timeout=CALL_TIMEOUT_S)
                self.client.unregister_system_shared_memory(client_timeout=CALL_TIMEOUT_S)
                self.assertTrue(finished.wait(CALL_TIMEOUT_S), f"attempt {attempt}: no answer")
                if outcome["error"] is None:
                    np.testing.assert_allclose(obj.output(), want, rtol=1e-6, atol=0,
                                               err_msg=f"SERVER: attempt {attempt}")
                    answered["OK"] += 1
                else:
                    self.assertIn("is not registered", outcome["error"].message())
                    answered["not registered"] += 1
                shm.set_shared_memory_region(obj.handle, [np.zeros(rows, np.float32)],
                                             offset=obj.output_offset)
        print(f"requests racing an unregister, answered: {answered}")
        self.assert_still_serves("unregistering during requests")

    def test_a_cuda_handle_that_cannot_be_opened_is_refused_clearly(self):
        # A zero handle is no allocation: a server without a GPU says it has
        # none (FAILED_PRECONDITION), one with a GPU that CUDA refused the
        # handle (INVALID_ARGUMENT); either names the region and registers
        # nothing. Real handles are registered in the GPU check.
        with self.assertRaises(InferenceServerException) as raised:
            # tritonclient takes the IPC handle base64-encoded, as
            # cuda_shared_memory.get_raw_handle gives it.
            self.client.register_cuda_shared_memory("gpu_in", base64.b64encode(b"\0" * 64), 0,
                                                    1024, client_timeout=CALL_TIMEOUT_S)
        self.assertIn(raised.exception.status(),
                      ("StatusCode.FAILED_PRECONDITION", "StatusCode.INVALID_ARGUMENT"))
        self.assertIn("CUDA shared memory region 'gpu_in'", raised.exception.message())
        status = self.client.get_cuda_shared_memory_status(client_timeout=CALL_TIMEOUT_S)
        self.assertEqual(len(status.regions), 0)
        self.client.unregister_cuda_shared_memory(client_timeout=CALL_TIMEOUT_S)


class HttpSharedMemoryTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.client = httpclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_register_infer_status_unregister(self):
        arrays = dlrm_arrays(ROWS, seed=5)
        with SharedMemoryObject("http_main", arrays) as obj:
            self.client.register_system_shared_memory("http_in", obj.key,
                                                      obj.dense_bytes + obj.sparse_bytes)
            self.client.register_system_shared_memory("http_out", obj.key, obj.output_bytes,
                                                      offset=obj.output_offset)
            dense = httpclient.InferInput("dense", list(arrays["dense"].shape), "FP32")
            dense.set_shared_memory("http_in", obj.dense_bytes)
            sparse = httpclient.InferInput("sparse_emb", list(arrays["sparse_emb"].shape), "FP32")
            sparse.set_shared_memory("http_in", obj.sparse_bytes, offset=obj.dense_bytes)
            output = httpclient.InferRequestedOutput("prob", binary_data=True)
            output.set_shared_memory("http_out", obj.output_bytes)
            result = self.client.infer("dlrm_dense", [dense, sparse], outputs=[output])
            described = result.get_output("prob")
            self.assertEqual(described["shape"], [ROWS, 1])
            # Triton's answer: name, datatype and shape; no parameters, which
            # Triton's C++ client (perf_analyzer) would read as binary data.
            self.assertEqual(sorted(described), ["datatype", "name", "shape"])

            with_bytes = []
            for name, array in arrays.items():
                tensor = httpclient.InferInput(name, list(array.shape), "FP32")
                tensor.set_data_from_numpy(array)
                with_bytes.append(tensor)
            want = self.client.infer("dlrm_dense", with_bytes).as_numpy("prob")
            np.testing.assert_allclose(obj.output(), want, rtol=1e-6, atol=0,
                                       err_msg="SERVER: shared memory and bytes differ (HTTP)")

            status = self.client.get_system_shared_memory_status()
            self.assertEqual([region["name"] for region in status], ["http_in", "http_out"])
            self.assertEqual(status[1]["key"], obj.key)
            self.assertEqual(status[1]["offset"], obj.output_offset)
            self.assertEqual(status[1]["byte_size"], obj.output_bytes)

            # A bad region over HTTP: 400 naming it.
            dense.set_shared_memory("http_missing", obj.dense_bytes)
            with self.assertRaises(InferenceServerException) as raised:
                self.client.infer("dlrm_dense", [dense, sparse])
            self.assertEqual(raised.exception.status(), "400")
            self.assertIn("'http_missing' is not registered", raised.exception.message())
            with self.assertRaises(InferenceServerException) as raised:
                self.client.register_system_shared_memory("http_in", obj.key, 16)
            self.assertEqual(raised.exception.status(), "409")

            self.client.unregister_system_shared_memory("http_in")
            self.assertEqual([r["name"] for r in self.client.get_system_shared_memory_status()],
                             ["http_out"])
            with self.assertRaises(InferenceServerException) as raised:
                self.client.get_system_shared_memory_status("http_in")
            self.assertEqual(raised.exception.status(), "404")
            self.client.unregister_system_shared_memory()
            self.assertEqual(self.client.get_system_shared_memory_status(), [])
            self.assertEqual(self.client.get_cuda_shared_memory_status(), [])

    def test_routes_outside_the_extension_are_404(self):
        base = f"http://127.0.0.1:{_server.http_port}"
        for method, path in [("POST", "/v2/systemsharedmemory/status"),
                             ("POST", "/v2/systemsharedmemory/register"),
                             ("POST", "/v2/systemsharedmemory/region/r/bogus"),
                             ("GET", "/v2/systemsharedmemory/region/r/register"),
                             ("GET", "/v2/cudasharedmemory/region/r/unregister")]:
            with self.subTest(method=method, path=path):
                request = urllib.request.Request(base + path, method=method,
                                                 data=b"{}" if method == "POST" else None)
                with self.assertRaises(urllib.error.HTTPError) as raised:
                    urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S)
                self.assertEqual(raised.exception.code, 404, f"SERVER: {method} {path}")


# Note [Shared memory owners]: the header a client adds to every call for a
# namespace of regions of its own.
OWNER_HEADER = "graphserve-shared-memory-owner"


class SharedMemoryOwnersTest(unittest.TestCase):
    """Two clients that send their own owner header, and one that sends
    none, each through tritonclient's `headers=` argument: each lists, names
    in its requests and unregisters only its own regions, the same names
    register once per owner, and another's region answers as one never
    registered, over gRPC and HTTP."""

    def check_owners(self, client, module, names_in):
        alice = {OWNER_HEADER: uuid.uuid4().hex}
        bob = {OWNER_HEADER: uuid.uuid4().hex}
        alice_arrays, bob_arrays = dlrm_arrays(ROWS, seed=20), dlrm_arrays(ROWS, seed=21)
        protocol = module.__name__.rsplit(".", 1)[-1]

        def register(obj, headers):
            client.register_system_shared_memory("owned_in", obj.key,
                                                 obj.dense_bytes + obj.sparse_bytes,
                                                 headers=headers)
            client.register_system_shared_memory("owned_out", obj.key, obj.output_bytes,
                                                 offset=obj.output_offset, headers=headers)

        def infer(obj, headers):
            dense = module.InferInput("dense", list(obj.arrays["dense"].shape), "FP32")
            dense.set_shared_memory("owned_in", obj.dense_bytes)
            sparse = module.InferInput("sparse_emb", list(obj.arrays["sparse_emb"].shape), "FP32")
            sparse.set_shared_memory("owned_in", obj.sparse_bytes, offset=obj.dense_bytes)
            output = module.InferRequestedOutput("prob")
            output.set_shared_memory("owned_out", obj.output_bytes)
            client.infer("dlrm_dense", [dense, sparse], outputs=[output], headers=headers)
            return obj.output()

        reference = gp.ReferenceModel(_repository, "dlrm_dense")
        with SharedMemoryObject(f"{protocol}_alice", alice_arrays) as alice_obj, \
                SharedMemoryObject(f"{protocol}_bob", bob_arrays) as bob_obj:
            register(alice_obj, alice)
            register(bob_obj, bob)  # the same names: another namespace
            try:
                self.assertEqual(names_in(client.get_system_shared_memory_status(headers=alice)),
                                 ["owned_in", "owned_out"])
                self.assertEqual(names_in(client.get_system_shared_memory_status()), [],
                                 "SERVER: a client without the header sees owned regions")
                for obj, headers, arrays in ((alice_obj, alice, alice_arrays),
                                             (bob_obj, bob, bob_arrays)):
                    got = infer(obj, headers)
                    self.assertLessEqual(
                        gp.relative_error(got, reference.run(arrays)["prob"]),
                        gp.RELATIVE_TOLERANCE, f"SERVER: {protocol}: an owner's own regions")
                # Without the header, alice's regions are not there at all.
                with self.assertRaises(InferenceServerException) as raised:
                    infer(alice_obj, None)
                self.assertIn("'owned_in' is not registered", raised.exception.message())
                self.assertNotIn(alice[OWNER_HEADER], raised.exception.message())
                client.unregister_system_shared_memory(headers=None)
                client.unregister_system_shared_memory("owned_in", headers=bob)
                self.assertEqual(names_in(client.get_system_shared_memory_status(headers=alice)),
                                 ["owned_in", "owned_out"],
                                 "SERVER: another client's unregister reached alice's regions")
                self.assertEqual(names_in(client.get_system_shared_memory_status(headers=bob)),
                                 ["owned_out"])
                infer(alice_obj, alice)
            finally:
                client.unregister_system_shared_memory(headers=alice)
                client.unregister_system_shared_memory(headers=bob)
        self.assertEqual(names_in(client.get_system_shared_memory_status(headers=alice)), [])

    def test_owners_over_grpc(self):
        client = grpcclient.InferenceServerClient(url=_server.url)
        try:
            self.check_owners(client, grpcclient,
                              lambda status: sorted(status.regions))
        finally:
            client.close()

    def test_owners_over_http(self):
        client = httpclient.InferenceServerClient(f"127.0.0.1:{_server.http_port}")
        try:
            self.check_owners(client, httpclient,
                              lambda status: sorted(region["name"] for region in status))
        finally:
            client.close()


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
