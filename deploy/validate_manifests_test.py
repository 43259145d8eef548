"""validate_manifests.py passes the real manifests and fails each of them
broken in a way the API server, KServe or the Prometheus Operator would
refuse: a checker that passes
everything would hide exactly what it exists to catch."""

import copy
import os
import shutil
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import validate_manifests as vm  # noqa: E402  (after the path above)


def load(relative: str) -> dict:
    (doc,) = vm.load_documents(os.path.join(HERE, relative))
    return doc


class BuiltinKindsTest(unittest.TestCase):
    def setUp(self):
        self.deployment = load("k8s/deployment.yaml")
        self.service = load("k8s/service.yaml")
        self.autoscaler = load("k8s/horizontal-pod-autoscaler.yaml")

    def problems(self, doc):
        return vm.validate_builtin(doc, vm.KUBERNETES_VERSION)

    def container(self, deployment):
        return deployment["spec"]["template"]["spec"]["containers"][0]

    def test_real_manifests_pass(self):
        self.assertEqual(self.problems(self.deployment), [])
        self.assertEqual(self.problems(self.service), [])
        self.assertEqual(self.problems(self.autoscaler), [])

    def test_unknown_field_fails(self):
        broken = copy.deepcopy(self.deployment)
        pod = broken["spec"]["template"]["spec"]
        pod["terminationGracePeriod"] = pod.pop("terminationGracePeriodSeconds")
        self.assertIn("terminationGracePeriod", " ".join(self.problems(broken)))

    def test_grpc_probe_by_port_name_fails(self):
        broken = copy.deepcopy(self.deployment)
        self.container(broken)["readinessProbe"]["grpc"]["port"] = "grpc"
        self.assertIn("readinessProbe.grpc.port", " ".join(self.problems(broken)))

    def test_missing_selector_fails(self):
        broken = copy.deepcopy(self.deployment)
        del broken["spec"]["selector"]
        self.assertIn("selector", " ".join(self.problems(broken)))

    def test_service_port_of_wrong_type_fails(self):
        broken = copy.deepcopy(self.service)
        broken["spec"]["ports"][0]["port"] = "8001/tcp"
        self.assertIn("spec.ports.0.port", " ".join(self.problems(broken)))

    def test_autoscaler_metric_of_unknown_type_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        broken["spec"]["metrics"][0]["type"] = "Pod"
        self.assertIn("spec.metrics.0.type", " ".join(self.problems(broken)))

    def test_autoscaler_metric_without_its_source_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        broken["spec"]["metrics"][0]["type"] = "External"
        self.assertIn("type External takes `external`", " ".join(self.problems(broken)))

    def test_autoscaler_unknown_target_type_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        broken["spec"]["metrics"][0]["pods"]["target"]["type"] = "Average"
        self.assertIn("target.type: 'Average'", " ".join(self.problems(broken)))

    def test_autoscaler_min_above_max_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        broken["spec"]["minReplicas"] = broken["spec"]["maxReplicas"] + 1
        self.assertIn("is above maxReplicas", " ".join(self.problems(broken)))

    def test_autoscaler_window_above_an_hour_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        broken["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = 7200
        self.assertIn("outside 0..3600", " ".join(self.problems(broken)))

    def test_autoscaler_target_of_wrong_kind_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        broken["spec"]["scaleTargetRef"]["name"] = 7
        self.assertIn("scaleTargetRef.name", " ".join(self.problems(broken)))

    def test_autoscaler_unknown_field_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        behavior = broken["spec"]["behavior"]
        behavior["scaleDown"]["stabilizationWindow"] = (
            behavior["scaleDown"].pop("stabilizationWindowSeconds"))
        self.assertIn("stabilizationWindow", " ".join(self.problems(broken)))

    def test_autoscaler_without_max_replicas_fails(self):
        broken = copy.deepcopy(self.autoscaler)
        del broken["spec"]["maxReplicas"]
        self.assertIn("maxReplicas", " ".join(self.problems(broken)))

    def test_unknown_kind_fails_where_the_cli_only_warns(self):
        broken = copy.deepcopy(self.deployment)
        broken["kind"] = "Deploymnet"
        self.assertIn("no schema", " ".join(self.problems(broken)))


class KServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = vm.KServeSchema(vm.KUBERNETES_VERSION)

    def setUp(self):
        self.runtime = load("kserve/cluster-serving-runtime.yaml")
        self.isvc = load("kserve/inference-service.yaml")
        self.model = self.isvc["spec"]["predictor"]["model"]
        self.container = self.runtime["spec"]["containers"][0]

    def problems(self):
        documents = [("runtime.yaml", self.runtime), ("isvc.yaml", self.isvc)]
        return " ".join(vm.validate_kserve(documents, self.schema))

    def test_real_manifests_pass(self):
        self.assertEqual(self.problems(), "")

    # kserve_schema.yaml's own fields, strict.

    def test_unknown_runtime_field_fails(self):
        self.runtime["spec"]["protocolVersion"] = self.runtime["spec"].pop("protocolVersions")
        self.assertIn("'protocolVersion' was unexpected", self.problems())

    def test_unknown_predictor_field_fails(self):
        self.model["storageURI"] = self.model.pop("storageUri")
        self.assertIn("'storageURI' was unexpected", self.problems())

    def test_unknown_protocol_fails(self):
        self.runtime["spec"]["protocolVersions"] = ["grpc-v3"]
        self.assertIn("spec.protocolVersions.0: 'grpc-v3' is not one of", self.problems())

    def test_unknown_model_protocol_fails(self):
        self.model["protocolVersion"] = "http"
        self.assertIn("spec.predictor.model.protocolVersion: 'http' is not one of",
                      self.problems())

    def test_priority_below_minimum_fails(self):
        self.runtime["spec"]["supportedModelFormats"][0]["priority"] = 0
        self.assertIn("supportedModelFormats.0.priority", self.problems())

    def test_model_without_format_fails(self):
        del self.model["modelFormat"]
        self.assertIn("'modelFormat' is a required property", self.problems())

    def test_unknown_deployment_mode_fails(self):
        self.isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] = "Raw"
        self.assertIn("'Raw' is not one of", self.problems())

    def test_negative_min_replicas_fails(self):
        self.isvc["spec"]["predictor"]["minReplicas"] = -1
        self.assertIn("spec.predictor.minReplicas", self.problems())

    def test_unknown_kind_fails(self):
        self.isvc["kind"] = "InferenceServce"
        self.assertIn("no schema for kind InferenceServce", self.problems())

    def test_kind_of_the_other_api_version_fails(self):
        self.isvc["apiVersion"] = "serving.kserve.io/v1alpha1"
        self.assertIn("apiVersion: 'serving.kserve.io/v1beta1' was expected", self.problems())

    # Kubernetes' own types, from kubernetes-validate's definitions.

    def test_unknown_field_in_runtime_container_fails(self):
        self.container["readinessProbe"]["grpc"]["grpcPort"] = 8001
        self.assertIn("spec.containers.0.readinessProbe.grpc", self.problems())

    def test_bad_metadata_fails(self):
        self.isvc["metadata"]["annotation"] = self.isvc["metadata"].pop("annotations")
        self.assertIn("'annotation' was unexpected", self.problems())

    def test_bad_field_of_the_model_container_fails(self):
        # ModelSpec embeds a Container: its fields are Kubernetes', strict.
        self.model["lifecycle"]["preStop"]["exec"]["cmd"] = ["sleep", "5"]
        self.assertIn("spec.predictor.model.lifecycle.preStop.exec", self.problems())

    def test_bad_field_of_the_predictor_pod_fails(self):
        # PredictorSpec embeds a PodSpec.
        self.isvc["spec"]["predictor"]["terminationGracePeriodSeconds"] = "40s"
        self.assertIn("spec.predictor.terminationGracePeriodSeconds", self.problems())

    def test_container_port_of_wrong_type_fails(self):
        self.container["ports"][0]["containerPort"] = "8000"
        self.assertIn("spec.containers.0.ports.0.containerPort", self.problems())

    # What KServe's webhooks and controller require of the pair.

    def test_model_format_the_runtime_does_not_serve_fails(self):
        self.model["modelFormat"]["version"] = "2"
        self.assertIn("does not serve onnx:2", self.problems())

    def test_protocol_the_runtime_does_not_speak_fails(self):
        self.model["protocolVersion"] = "v1"
        self.assertIn("not 'v1'", self.problems())

    def test_runtime_without_kserve_container_fails(self):
        self.container["name"] = "graphserve"
        self.assertIn("kserve-container", self.problems())

    def test_missing_runtime_fails(self):
        self.model["runtime"] = "graphserve-gpu"
        self.assertIn("not among the checked runtimes", self.problems())

    def test_name_that_is_no_dns_label_fails(self):
        self.isvc["metadata"]["name"] = "GraphServe"
        self.assertIn("DNS-1035", self.problems())

    def test_min_replicas_above_max_fails(self):
        self.isvc["spec"]["predictor"]["minReplicas"] = 5  # maxReplicas is 4
        self.assertIn("minReplicas 5 is above maxReplicas 4", self.problems())

    def test_two_ports_in_knative_mode_fail(self):
        self.isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] = "Knative"
        self.assertIn("takes one container port", self.problems())

    def test_knative_is_the_default_mode(self):
        del self.isvc["metadata"]["annotations"]
        self.assertIn("KServe's default Knative", self.problems())

    def test_what_knative_mode_takes(self):
        # One port, named h2c or http1, and no lifecycle hooks.
        self.isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] = "Knative"
        self.container["ports"] = [p for p in self.container["ports"] if p["name"] == "h2c"]
        self.assertIn("Knative refuses lifecycle hooks", self.problems())
        del self.model["lifecycle"]
        self.assertEqual(self.problems(), "")
        self.container["ports"][0]["name"] = "grpc"
        self.assertIn("not 'grpc'", self.problems())

    def test_built_in_kind_among_kserve_files_fails(self):
        documents = [("service.yaml", load("k8s/service.yaml"))]
        problems = list(vm.validate_kserve(documents, self.schema))
        self.assertIn("not a KServe resource", " ".join(problems))


class MonitoringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = vm.PrometheusOperatorSchema(vm.KUBERNETES_VERSION)

    def setUp(self):
        self.monitor = load("k8s/service-monitor.yaml")
        self.endpoint = self.monitor["spec"]["endpoints"][0]

    def problems(self):
        return " ".join(vm.validate_monitoring([("monitor.yaml", self.monitor)], self.schema))

    def test_real_manifest_passes(self):
        self.assertEqual(self.problems(), "")

    def test_unknown_endpoint_field_fails(self):
        self.endpoint["metricsPath"] = self.endpoint.pop("path")
        self.assertIn("'metricsPath' was unexpected", self.problems())

    def test_unknown_spec_field_fails(self):
        self.monitor["spec"]["endpoint"] = self.monitor["spec"].pop("endpoints")
        self.assertIn("'endpoint' was unexpected", self.problems())

    def test_port_by_number_fails(self):
        # `port` names a Service port; a number belongs in targetPort.
        self.endpoint["port"] = 8002
        self.assertIn("spec.endpoints.0.port: 8002 is not of type 'string'", self.problems())

    def test_bad_selector_fails(self):
        # The selector is Kubernetes' LabelSelector, from kubernetes-validate.
        self.monitor["spec"]["selector"]["matchLabel"] = (
            self.monitor["spec"]["selector"].pop("matchLabels"))
        self.assertIn("'matchLabel' was unexpected", self.problems())

    def test_duration_that_prometheus_cannot_parse_fails(self):
        self.endpoint["interval"] = "15 seconds"
        self.assertIn("spec.endpoints.0.interval", self.problems())

    def test_relative_path_fails(self):
        self.endpoint["path"] = "metrics"
        self.assertIn("spec.endpoints.0.path", self.problems())

    def test_missing_endpoints_fail(self):
        del self.monitor["spec"]["endpoints"]
        self.assertIn("'endpoints' is a required property", self.problems())

    def test_timeout_above_interval_fails(self):
        self.endpoint["interval"], self.endpoint["scrapeTimeout"] = "15s", "1m"
        self.assertIn("scrapeTimeout 1m is longer than interval 15s", self.problems())
        self.endpoint["scrapeTimeout"] = "14s999ms"
        self.assertEqual(self.problems(), "")

    def test_other_api_version_fails(self):
        self.monitor["apiVersion"] = "monitoring.coreos.com/v1alpha1"
        self.assertIn("apiVersion: 'monitoring.coreos.com/v1' was expected", self.problems())

    def test_built_in_kind_among_monitoring_files_fails(self):
        problems = vm.validate_monitoring([("service.yaml", load("k8s/service.yaml"))],
                                          self.schema)
        self.assertIn("not a Prometheus Operator resource", " ".join(problems))

    def test_durations(self):
        self.assertEqual(vm.duration_ms("1m30s"), 90000)
        self.assertEqual(vm.duration_ms("500ms"), 500)
        self.assertEqual(vm.duration_ms("1h2m"), 3720000)
        self.assertEqual(vm.duration_ms("0"), 0)
        self.assertIsNone(vm.duration_ms(""))


class KServeSchemaFileTest(unittest.TestCase):
    """kserve_schema.yaml stays strict and its Kubernetes references resolve."""

    def write_schema(self, schema: dict) -> str:
        scratch = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, scratch)
        path = os.path.join(scratch, "schema.yaml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(schema, f)
        return path

    def real_schema(self) -> dict:
        with open(vm.KSERVE_SCHEMA, encoding="utf-8") as f:
            return yaml.safe_load(f)

    def test_object_without_additional_properties_is_refused(self):
        schema = self.real_schema()
        del schema["$defs"]["ModelFormat"]["additionalProperties"]
        with self.assertRaises(SystemExit) as raised:
            vm.KServeSchema(vm.KUBERNETES_VERSION, self.write_schema(schema))
        self.assertIn("/$defs/ModelFormat", str(raised.exception))

    def test_inlining_an_unknown_kubernetes_type_is_refused(self):
        schema = self.real_schema()
        schema["$defs"]["ModelSpec"][vm.INLINE_KEYWORD] = "io.k8s.api.core.v1.Containr"
        with self.assertRaises(SystemExit):
            vm.KServeSchema(vm.KUBERNETES_VERSION, self.write_schema(schema))

    def test_inlined_fields_come_from_kubernetes(self):
        definitions = vm.kubernetes_definitions(vm.KUBERNETES_VERSION)
        schema = vm.inline_kubernetes_fields(self.real_schema(), definitions)
        fields = schema["$defs"]["ModelSpec"]["properties"]
        self.assertEqual(fields["args"]["$ref"], vm.KUBERNETES_DEFINITIONS_ID
                         + "#/$defs/io.k8s.api.core.v1.Container/properties/args")
        self.assertIn("storageUri", fields)  # KServe's own, kept
        self.assertNotIn(vm.INLINE_KEYWORD, schema["$defs"]["ModelSpec"])

    def test_loose_object_in_the_prometheus_operator_schema_is_refused(self):
        with open(vm.PROMETHEUS_OPERATOR_SCHEMA, encoding="utf-8") as f:
            schema = yaml.safe_load(f)
        del schema["$defs"]["Endpoint"]["additionalProperties"]
        with self.assertRaises(SystemExit) as raised:
            vm.PrometheusOperatorSchema(vm.KUBERNETES_VERSION, self.write_schema(schema))
        self.assertIn("/$defs/Endpoint", str(raised.exception))

    def test_kubernetes_release_without_schemas_is_refused(self):
        with self.assertRaises(SystemExit):
            vm.kubernetes_definitions("1.12")


if __name__ == "__main__":
    unittest.main()
