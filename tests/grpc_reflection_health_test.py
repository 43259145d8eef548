"""What generic gRPC tooling sees of the real graphserve binary: server
reflection through grpcio-reflection's client (what `grpcurl list` and
`grpcurl describe` do), a call made only from reflected descriptors (what
`grpcurl ... inference.GRPCInferenceService/ModelMetadata` does), and
grpc.health.v1 Check through grpcio-health-checking (what Kubernetes' gRPC
probes and grpc_health_probe do). Versions pinned in
deploy/python_requirements.txt.

    bazel test //tests:grpc_reflection_health_test \
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

Without GRAPHSERVE_PYTHON the test fails and says how to set it
(deploy/venv_test.sh). A failing assertion whose message starts with
"SERVER:" names the request, what was expected and what came back.
"""

import sys
import unittest

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase)

import graphserve_process as gp

CALL_TIMEOUT_S = 30  # a unary call on loopback; only a hung server comes near it

INFERENCE_SERVICE = "inference.GRPCInferenceService"
HEALTH_SERVICE = "grpc.health.v1.Health"
REFLECTION_SERVICE = "grpc.reflection.v1alpha.ServerReflection"
# What a Triton client calls (grpc_service.proto); all must be reflected.
INFERENCE_METHODS = ("ServerLive", "ServerReady", "ModelReady", "ServerMetadata",
                     "ModelMetadata", "ModelInfer", "ModelConfig", "ModelStatistics")

SERVER_BINARY = MAKE_REPOSITORY = None
_server = None


def setUpModule():
    global _server
    _server = gp.ServerProcess(SERVER_BINARY, gp.make_demo_repository(MAKE_REPOSITORY)).start()


def tearDownModule():
    gp.stop_checked(_server)


def reflect(channel, request):
    """One request on the bidirectional ServerReflectionInfo stream."""
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = list(stub.ServerReflectionInfo(iter([request]), timeout=CALL_TIMEOUT_S))
    assert len(responses) == 1, f"one reflection request, {len(responses)} responses"
    return responses[0]


class ReflectionTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.channel = grpc.insecure_channel(_server.url)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    def test_list_services(self):
        response = reflect(self.channel,
                           reflection_pb2.ServerReflectionRequest(list_services=""))
        self.assertFalse(response.HasField("error_response"), str(response.error_response))
        services = sorted(s.name for s in response.list_services_response.service)
        print(f"reflection lists: {services}")
        self.assertIn(INFERENCE_SERVICE, services, "SERVER: not listed by reflection")
        self.assertIn(REFLECTION_SERVICE, services, "SERVER: not listed by reflection")
        self.assertIn(HEALTH_SERVICE, services, "SERVER: not listed by reflection")

    def test_describe_inference_service(self):
        response = reflect(self.channel, reflection_pb2.ServerReflectionRequest(
            file_containing_symbol=INFERENCE_SERVICE))
        self.assertFalse(response.HasField("error_response"),
                         f"SERVER: file_containing_symbol {INFERENCE_SERVICE}: "
                         f"{response.error_response}")
        files = [descriptor_pb2.FileDescriptorProto.FromString(serialized)
                 for serialized in response.file_descriptor_response.file_descriptor_proto]
        services = {f"{f.package}.{s.name}": s for f in files for s in f.service}
        self.assertIn(INFERENCE_SERVICE, services, f"files: {[f.name for f in files]}")
        methods = {m.name: m for m in services[INFERENCE_SERVICE].method}
        for name in INFERENCE_METHODS:
            self.assertIn(name, methods, f"SERVER: {INFERENCE_SERVICE} has no {name}")
        self.assertEqual(methods["ModelInfer"].input_type, ".inference.ModelInferRequest")
        self.assertEqual(methods["ModelInfer"].output_type, ".inference.ModelInferResponse")

    def test_call_from_reflected_descriptors_only(self):
        # Every type comes from the server, dependencies (model_config.proto)
        # included, as grpcurl builds them; no generated code is involved.
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(self.channel))
        service = pool.FindServiceByName(INFERENCE_SERVICE)
        method = service.methods_by_name["ModelMetadata"]
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        call = self.channel.unary_unary(
            f"/{INFERENCE_SERVICE}/ModelMetadata",
            request_serializer=request_class.SerializeToString,
            response_deserializer=response_class.FromString)
        response = call(request_class(name="mlp"), timeout=CALL_TIMEOUT_S)
        self.assertEqual(response.name, "mlp")
        self.assertEqual([(t.name, t.datatype, list(t.shape)) for t in response.inputs],
                         [("x", "FP32", [-1, 512])])
        # The config schema is reachable the same way, capture section included.
        config = pool.FindMessageTypeByName("inference.ModelConfig")
        self.assertIn("max_batch_size", config.fields_by_name)
        print(f"reflected ModelConfig fields: {sorted(config.fields_by_name)}")

    def test_health_callable_from_reflected_descriptors_only(self):
        # `grpcurl -plaintext HOST:PORT grpc.health.v1.Health/Check`: the
        # service is listed, so grpcurl asks reflection for its descriptor.
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(self.channel))
        try:
            service = pool.FindServiceByName(HEALTH_SERVICE)
        except KeyError:
            service = None
        self.assertIsNotNone(
            service,
            f"SERVER: reflection lists {HEALTH_SERVICE} but answers file_containing_symbol "
            f"'{HEALTH_SERVICE}' with NOT_FOUND 'Symbol not found', so grpcurl cannot describe "
            f"or call it. gRPC's built-in health service carries no descriptor; linking the "
            f"generated health.pb.cc into graphserve (alwayslink) puts one in the generated "
            f"pool that reflection serves")
        method = service.methods_by_name["Check"]
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        call = self.channel.unary_unary(
            f"/{HEALTH_SERVICE}/Check",
            request_serializer=request_class.SerializeToString,
            response_deserializer=response_class.FromString)
        response = call(request_class(service=""), timeout=CALL_TIMEOUT_S)
        self.assertEqual(response_class.DESCRIPTOR.fields_by_name["status"].enum_type
                         .values_by_number[response.status].name, "SERVING")


class HealthTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.channel = grpc.insecure_channel(_server.url)
        cls.health = health_pb2_grpc.HealthStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()

    def test_serving_once_models_loaded(self):
        for service in ("", INFERENCE_SERVICE):
            with self.subTest(service=service):
                response = self.health.Check(health_pb2.HealthCheckRequest(service=service),
                                             timeout=CALL_TIMEOUT_S)
                self.assertEqual(response.status, health_pb2.HealthCheckResponse.SERVING,
                                 f"SERVER: Check('{service}')")

    def test_unknown_service_is_not_found(self):
        with self.assertRaises(grpc.RpcError) as raised:
            self.health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"),
                              timeout=CALL_TIMEOUT_S)
        self.assertEqual(raised.exception.code(), grpc.StatusCode.NOT_FOUND)


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
