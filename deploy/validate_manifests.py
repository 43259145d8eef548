"""Checks GraphServe's Kubernetes and KServe manifests offline, as the API
server would take them with `kubectl apply` (whose default field validation
is strict: an unknown field is an error, not dropped).

  validate_manifests.py kubernetes [--kubernetes-version 1.34] FILE...
      Built-in kinds (Deployment, Service, ...) against the Kubernetes
      version's OpenAPI schemas as kubernetes-validate ships them, strict. A
      kind with no schema fails: kubernetes-validate's own CLI only warns, so
      a misspelt kind would pass it. For a HorizontalPodAutoscaler, also what
      the API server's validation refuses and the OpenAPI schema, which
      types these as plain strings and integers, lets through: an unknown
      metric or target type, a metric without its source, minReplicas above
      maxReplicas, a stabilization window outside 0..3600 s.

  validate_manifests.py kserve [--schema kserve_schema.yaml] [--kubernetes-version 1.34] FILE...
      KServe's kinds against deploy/kserve_schema.yaml: GraphServe's own
      strict JSON Schema for the part of KServe v0.20's API these manifests
      use, whose Kubernetes types (metadata, containers, volumes, the
      predictor's pod fields) are kubernetes-validate's strict definitions
      for the Kubernetes version. Then what KServe's webhooks and controller
      require before they serve an InferenceService with a runtime: the
      runtime exists among FILEs, has a container named kserve-container,
      serves the model's format and version and speaks its protocol; the
      name is a DNS-1035 label; minReplicas is at most maxReplicas; and in
      Knative mode the model server has at most one port, named h2c or
      http1, and no lifecycle hooks.
      KServe's CRD validation rules and its other webhook checks are not run.

  validate_manifests.py monitoring [--schema prometheus_operator_schema.yaml] [--kubernetes-version 1.34] FILE...
      The Prometheus Operator's kinds (the ServiceMonitor) against
      deploy/prometheus_operator_schema.yaml: GraphServe's own strict JSON
      Schema for the part of monitoring.coreos.com/v1 it uses, with
      Kubernetes' types from kubernetes-validate as above. Then the operator's
      rule that an endpoint's scrapeTimeout is at most its interval. The
      CRD's CEL rules are not run.

Prints one line per problem and exits 1 when there is any, 0 otherwise.
"""

import argparse
import copy
import os
import re
import sys
from collections.abc import Iterator

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import referencing
import yaml

# The Kubernetes release the manifests are checked for: the one KServe v0.20.0
# builds against (its go.mod replaces k8s.io/api with v0.34).
KUBERNETES_VERSION = "1.34"

# GraphServe's descriptions of the KServe and Prometheus Operator API subsets
# (their headers say what they cover), and the id under which
# kubernetes-validate's definitions name themselves, which the descriptions'
# `$ref`s to Kubernetes types use.
HERE = os.path.dirname(os.path.abspath(__file__))
KSERVE_SCHEMA = os.path.join(HERE, "kserve_schema.yaml")
PROMETHEUS_OPERATOR_SCHEMA = os.path.join(HERE, "prometheus_operator_schema.yaml")
KUBERNETES_DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
# The schemas' keyword for a Kubernetes type that a custom resource's Go type
# embeds inline (kserve_schema.yaml's header explains).
INLINE_KEYWORD = "x-graphserve-inline"

KSERVE_GROUP = "serving.kserve.io"
MONITORING_GROUP = "monitoring.coreos.com"
# pkg/constants/constants.go of KServe v0.20: InferenceServiceContainerName.
KSERVE_CONTAINER = "kserve-container"
# KServe's webhook: an InferenceService's name is a DNS-1035 label.
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# The annotation that picks the deployment mode, KServe's documented default
# when it is absent (a cluster's inferenceservice-config may change it), and
# the modes that make a Knative Service, new name and old.
DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
DEFAULT_DEPLOYMENT_MODE = "Knative"
KNATIVE_MODES = ("Knative", "Serverless")
# Knative Serving's rule for the serving container: one port at most, named
# h2c (HTTP/2: gRPC), http1 (HTTP/1.1) or nothing.
KNATIVE_PORT_NAMES = ("", "h2c", "http1")


def load_documents(path: str) -> list[dict]:
    """Every non-empty YAML document of `path`."""
    with open(path, encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def describe(path: str, doc: dict) -> str:
    name = (doc.get("metadata") or {}).get("name", "?")
    return f"{path}: {doc.get('kind', '?')}/{name}"


def error_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "(top)"


# --- built-in kinds -----------------------------------------------------------


# autoscaling/v2's metric source types, each with the field that holds it,
# and target types (the API server's validation in pkg/apis/autoscaling).
HPA_METRIC_SOURCES = {"Object": "object", "Pods": "pods", "Resource": "resource",
                      "ContainerResource": "containerResource", "External": "external"}
HPA_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
HPA_MAX_STABILIZATION_SECS = 3600


def check_autoscaler(hpa: dict) -> list[str]:
    """What the API server refuses in an autoscaling/v2 HPA that the OpenAPI
    schema does not say."""
    spec = hpa.get("spec") or {}
    problems = []
    low, high = spec.get("minReplicas", 1), spec.get("maxReplicas")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        problems.append(f"spec: minReplicas {low} is above maxReplicas {high}")
    for i, metric in enumerate(spec.get("metrics") or []):
        kind = metric.get("type")
        source = HPA_METRIC_SOURCES.get(kind)
        if source is None:
            problems.append(f"spec.metrics.{i}.type: {kind!r} is not one of "
                            f"{', '.join(HPA_METRIC_SOURCES)}")
            continue
        others = set(HPA_METRIC_SOURCES.values()) & set(metric) - {source}
        if source not in metric or others:
            problems.append(f"spec.metrics.{i}: type {kind} takes `{source}` and no other "
                            f"source (has {sorted(set(metric) - {'type'})})")
            continue
        target = (metric[source].get("target") or {}).get("type")
        if target not in HPA_TARGET_TYPES:
            problems.append(f"spec.metrics.{i}.{source}.target.type: {target!r} is not one "
                            f"of {', '.join(HPA_TARGET_TYPES)}")
    for direction in ("scaleUp", "scaleDown"):
        rules = (spec.get("behavior") or {}).get(direction) or {}
        window = rules.get("stabilizationWindowSeconds", 0)
        if isinstance(window, int) and not 0 <= window <= HPA_MAX_STABILIZATION_SECS:
            problems.append(f"spec.behavior.{direction}.stabilizationWindowSeconds: {window} "
                            f"is outside 0..{HPA_MAX_STABILIZATION_SECS}")
    return problems


def validate_builtin(doc: dict, kubernetes_version: str) -> list[str]:
    """Problems of one built-in resource against kubernetes-validate's strict
    schemas; an unknown kind or apiVersion is a problem. Then, for an HPA,
    check_autoscaler's rules."""
    try:
        kubernetes_validate.validate(doc, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{error_path(e)}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [f"no schema: {e.message}"]
    if doc.get("apiVersion") == "autoscaling/v2" and doc.get("kind") == "HorizontalPodAutoscaler":
        return check_autoscaler(doc)
    return []


# --- KServe kinds ---------------------------------------------------------------


def kubernetes_definitions(kubernetes_version: str) -> dict:
    """kubernetes-validate's strict definitions (every core/v1, apps/v1, meta/v1
    type, by its OpenAPI name) for the Kubernetes release."""
    utils = kubernetes_validate.utils
    shipped = sorted({v for v in utils.all_versions()
                      if utils.major_minor(v) == utils.major_minor(kubernetes_version)})
    if not shipped:
        raise SystemExit(f"kubernetes-validate ships no schemas for Kubernetes "
                         f"{kubernetes_version}")
    definitions = utils.schema_contents(
        f"kubernetes-json-schema/v{shipped[-1]}-local-strict/_definitions.json",
        kubernetes_version)
    if definitions.get("$id") != KUBERNETES_DEFINITIONS_ID:
        raise SystemExit(f"kubernetes-validate's definitions name themselves "
                         f"{definitions.get('$id')!r}, not {KUBERNETES_DEFINITIONS_ID!r}, "
                         f"which our schemas of custom resources refer to")
    return definitions


def loose_objects(schema: dict) -> list[str]:
    """Where `schema` lists properties without saying additionalProperties: an
    object there would take unknown fields, which `kubectl apply` refuses."""
    found = []

    def visit(node, where):
        if isinstance(node, list):
            for i, item in enumerate(node):
                visit(item, f"{where}/{i}")
        elif isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                found.append(where or "/")
            for key, child in node.items():
                if key != "properties":
                    visit(child, f"{where}/{key}")
            for name, child in node.get("properties", {}).items():
                visit(child, f"{where}/properties/{name}")

    visit(schema, "")
    return found


def inline_kubernetes_fields(schema: dict, definitions: dict) -> dict:
    """A copy of `schema` in which every object that says
    `x-graphserve-inline: <definition>` also takes each field of that
    Kubernetes definition, as a `$ref` to the field's schema there; fields it
    lists itself keep its own schema. The definition's `required` list is not
    taken over."""
    schema = copy.deepcopy(schema)

    def visit(node):
        if isinstance(node, list):
            for item in node:
                visit(item)
        elif isinstance(node, dict):
            name = node.pop(INLINE_KEYWORD, None)
            if name is not None:
                definition = definitions["$defs"].get(name)
                if definition is None or "properties" not in definition:
                    raise SystemExit(f"{INLINE_KEYWORD}: {name} is no object type of "
                                     f"kubernetes-validate's definitions")
                fields = node.setdefault("properties", {})
                for field in definition["properties"]:
                    pointer = field.replace("~", "~0").replace("/", "~1")
                    fields.setdefault(field, {"$ref": f"{KUBERNETES_DEFINITIONS_ID}#/$defs/"
                                                      f"{name}/properties/{pointer}"})
            for child in node.values():
                visit(child)

    visit(schema)
    return schema


class CustomResourceSchema:
    """One of our schemas of custom resources (kserve_schema.yaml,
    prometheus_operator_schema.yaml): its resources, by kind, ready to
    validate against with Kubernetes' definitions for one release."""

    DEFAULT_PATH = ""

    def __init__(self, kubernetes_version: str, path: str | None = None):
        path = path or self.DEFAULT_PATH
        with open(path, encoding="utf-8") as f:
            schema = yaml.safe_load(f)
        loose = loose_objects(schema)
        if loose:
            raise SystemExit(f"{path}: objects with properties but no additionalProperties "
                             f"(say false, or what else they take): {', '.join(loose)}")
        definitions = kubernetes_definitions(kubernetes_version)
        schema = inline_kubernetes_fields(schema, definitions)
        registry = referencing.Registry().with_resource(
            KUBERNETES_DEFINITIONS_ID, referencing.Resource.from_contents(definitions))
        jsonschema.Draft202012Validator.check_schema(schema)
        self._validators = {}
        for name, definition in schema["$defs"].items():
            kind = definition.get("properties", {}).get("kind", {}).get("const")
            if kind is not None:
                resource = dict(schema, **{"$ref": f"#/$defs/{name}"})
                self._validators[kind] = jsonschema.Draft202012Validator(resource,
                                                                         registry=registry)

    def kinds(self) -> list[str]:
        return sorted(self._validators)

    def validate(self, doc: dict) -> list[str]:
        validator = self._validators.get(doc.get("kind"))
        if validator is None:
            return [f"no schema for kind {doc.get('kind')} (have: {', '.join(self.kinds())})"]
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
        return [f"{error_path(e)}: {e.message}" for e in errors]


class KServeSchema(CustomResourceSchema):
    DEFAULT_PATH = KSERVE_SCHEMA


class PrometheusOperatorSchema(CustomResourceSchema):
    DEFAULT_PATH = PROMETHEUS_OPERATOR_SCHEMA


def model_format_labels(formats: list[dict], runtime_named: bool) -> set[str]:
    """The model-format labels a runtime offers, as KServe's
    getServingRuntimeSupportedModelFormatLabelSet builds them: a runtime named
    by the InferenceService offers all its formats, an unnamed one only those
    with autoSelect."""
    labels = set()
    for model_format in formats:
        if runtime_named or model_format.get("autoSelect", False):
            labels.add(f"mt:{model_format['name']}")
            if "version" in model_format:
                labels.add(f"mt:{model_format['name']}:{model_format['version']}")
    return labels


def kserve_container(runtime: dict) -> dict | None:
    """The runtime's container that KServe runs as the model server."""
    for container in (runtime.get("spec") or {}).get("containers", []):
        if container.get("name") == KSERVE_CONTAINER:
            return container
    return None


def check_runtime(runtime: dict) -> list[str]:
    if kserve_container(runtime) is not None:
        return []
    names = [c.get("name") for c in (runtime.get("spec") or {}).get("containers", [])]
    return [f"spec.containers: none is named {KSERVE_CONTAINER} (have {names}), so KServe "
            f"finds no model server"]


def check_replicas(predictor: dict) -> list[str]:
    """KServe's webhook (validateReplicas): maxReplicas 0 means unset."""
    low, high = predictor.get("minReplicas", 1), predictor.get("maxReplicas", 0)
    if isinstance(low, int) and isinstance(high, int) and high != 0 and low > high:
        return [f"spec.predictor: minReplicas {low} is above maxReplicas {high}"]
    return []


def check_knative_mode(isvc: dict, model: dict, runtime: dict) -> list[str]:
    """In Knative mode the predictor is a Knative Service, whose container may
    declare one port, named h2c, http1 or nothing, and no lifecycle hooks.
    KServe merges the runtime's kserve-container with the model's container
    fields, ports by containerPort. Knative's other field limits are not
    checked."""
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    mode = annotations.get(DEPLOYMENT_MODE_ANNOTATION)
    if (mode or DEFAULT_DEPLOYMENT_MODE) not in KNATIVE_MODES:
        return []
    container = kserve_container(runtime) or {}
    ports = {}
    for port in container.get("ports", []) + model.get("ports", []):
        ports.setdefault(port.get("containerPort"), {}).update(port)
    where = (f"spec.predictor.model: deploymentMode {mode}" if mode else
             f"spec.predictor.model: no {DEPLOYMENT_MODE_ANNOTATION} annotation, so KServe's "
             f"default {DEFAULT_DEPLOYMENT_MODE}")
    problems = []
    if len(ports) > 1:
        problems.append(f"{where} makes a Knative Service, which takes one container port, but "
                        f"the runtime and model declare {sorted(ports)}: set "
                        f"{DEPLOYMENT_MODE_ANNOTATION}: Standard, or use a runtime with one port")
    for number, port in sorted(ports.items()):
        if port.get("name", "") not in KNATIVE_PORT_NAMES:
            problems.append(f"{where}: Knative takes port names h2c and http1 only, not "
                            f"{port.get('name')!r} ({number})")
    if "lifecycle" in model or "lifecycle" in container:
        problems.append(f"{where}: Knative refuses lifecycle hooks")
    return problems


def check_inference_service(isvc: dict, runtimes: dict[str, dict]) -> list[str]:
    """What KServe's webhook and predictor reconciler (reconcileModel) require
    of the InferenceService and the runtime it names."""
    problems = []
    name = (isvc.get("metadata") or {}).get("name", "")
    if not DNS_1035_LABEL.match(name):
        problems.append(f"metadata.name: {name!r} is not a DNS-1035 label")
    predictor = (isvc.get("spec") or {}).get("predictor") or {}
    problems += check_replicas(predictor)
    model = predictor.get("model")
    if model is None:
        return problems + ["spec.predictor.model: missing (a runtime serves only a model spec)"]
    runtime_name = model.get("runtime")
    if runtime_name is None:
        return problems + ["spec.predictor.model.runtime: missing; name the runtime to check it"]
    runtime = runtimes.get(runtime_name)
    if runtime is None:
        return problems + [f"spec.predictor.model.runtime: {runtime_name!r} is not among the "
                           f"checked runtimes ({', '.join(sorted(runtimes)) or 'none'})"]
    spec = runtime.get("spec") or {}
    model_format = model.get("modelFormat") or {}  # the schema requires its name
    wanted = f"mt:{model_format.get('name')}"
    if "version" in model_format:
        wanted += f":{model_format['version']}"
    if ("name" in model_format
            and wanted not in model_format_labels(spec.get("supportedModelFormats", []), True)):
        problems.append(f"spec.predictor.model.modelFormat: runtime {runtime_name!r} does "
                        f"not serve {wanted[3:]}")
    protocol = model.get("protocolVersion")
    supported = spec.get("protocolVersions", [])
    if protocol is not None and supported and protocol not in supported:
        problems.append(f"spec.predictor.model.protocolVersion: runtime {runtime_name!r} "
                        f"speaks {supported}, not {protocol!r}")
    return problems + check_knative_mode(isvc, model, runtime)


def validate_kserve(documents: list[tuple[str, dict]], schema: KServeSchema) -> Iterator[str]:
    runtimes = {}
    for path, doc in documents:
        group = str(doc.get("apiVersion", "")).rpartition("/")[0]
        if group != KSERVE_GROUP:
            yield f"{describe(path, doc)}: not a KServe resource ({doc.get('apiVersion')})"
            continue
        for problem in schema.validate(doc):
            yield f"{describe(path, doc)}: {problem}"
        if doc.get("kind") in ("ClusterServingRuntime", "ServingRuntime"):
            runtimes[(doc.get("metadata") or {}).get("name")] = doc
            for problem in check_runtime(doc):
                yield f"{describe(path, doc)}: {problem}"
    for path, doc in documents:
        if doc.get("kind") == "InferenceService":
            for problem in check_inference_service(doc, runtimes):
                yield f"{describe(path, doc)}: {problem}"


# --- Prometheus Operator kinds --------------------------------------------------


def duration_ms(text: str) -> int | None:
    """A Prometheus duration (the schema has checked its form) in
    milliseconds; None for an empty one."""
    units = {"y": 365 * 86400000, "w": 7 * 86400000, "d": 86400000, "h": 3600000,
             "m": 60000, "s": 1000, "ms": 1}
    parts = re.findall(r"([0-9]+)(ms|[ywdhms])", text)
    if not parts:
        return 0 if text == "0" else None
    return sum(int(number) * units[unit] for number, unit in parts)


def check_service_monitor(monitor: dict) -> list[str]:
    """The operator refuses an endpoint whose scrapeTimeout exceeds its
    interval (where both are set)."""
    problems = []
    for i, endpoint in enumerate((monitor.get("spec") or {}).get("endpoints") or []):
        interval = duration_ms(str(endpoint.get("interval", "")))
        timeout = duration_ms(str(endpoint.get("scrapeTimeout", "")))
        if interval is not None and timeout is not None and timeout > interval:
            problems.append(f"spec.endpoints.{i}: scrapeTimeout {endpoint['scrapeTimeout']} "
                            f"is longer than interval {endpoint['interval']}, which the "
                            f"operator refuses")
    return problems


def validate_monitoring(documents: list[tuple[str, dict]],
                        schema: PrometheusOperatorSchema) -> Iterator[str]:
    for path, doc in documents:
        group = str(doc.get("apiVersion", "")).rpartition("/")[0]
        if group != MONITORING_GROUP:
            yield (f"{describe(path, doc)}: not a Prometheus Operator resource "
                   f"({doc.get('apiVersion')})")
            continue
        problems = schema.validate(doc)
        if not problems and doc.get("kind") == "ServiceMonitor":
            problems = check_service_monitor(doc)
        for problem in problems:
            yield f"{describe(path, doc)}: {problem}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    kubernetes = sub.add_parser("kubernetes", help="built-in kinds")
    kserve = sub.add_parser("kserve", help="KServe's kinds")
    kserve.add_argument("--schema", default=KSERVE_SCHEMA,
                        help="the description of KServe's API to check against; default: "
                        "deploy/kserve_schema.yaml")
    monitoring = sub.add_parser("monitoring", help="the Prometheus Operator's kinds")
    monitoring.add_argument("--schema", default=PROMETHEUS_OPERATOR_SCHEMA,
                            help="the description of the operator's API to check against; "
                            "default: deploy/prometheus_operator_schema.yaml")
    for command in (kubernetes, kserve, monitoring):
        command.add_argument("--kubernetes-version", default=KUBERNETES_VERSION,
                             help=f"default {KUBERNETES_VERSION}; kubernetes-validate must "
                             "ship its schemas")
        command.add_argument("files", nargs="+")
    args = parser.parse_args(argv)

    documents = []
    for path in args.files:
        loaded = load_documents(path)
        if not loaded:
            print(f"{path}: no YAML document")
            return 1
        documents += [(path, doc) for doc in loaded]

    if args.kind == "kubernetes":
        problems = [f"{describe(path, doc)}: {problem}" for path, doc in documents
                    for problem in validate_builtin(doc, args.kubernetes_version)]
    elif args.kind == "kserve":
        schema = KServeSchema(args.kubernetes_version, args.schema)
        problems = list(validate_kserve(documents, schema))
    else:
        schema = PrometheusOperatorSchema(args.kubernetes_version, args.schema)
        problems = list(validate_monitoring(documents, schema))
    for problem in problems:
        print(problem)
    print(f"{len(documents)} resources checked, {len(problems)} problems "
          f"(Kubernetes {args.kubernetes_version})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
