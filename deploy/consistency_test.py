"""The deployment files agree with each other and with the binaries they run:
deploy/Dockerfile, deploy/compose.yaml, deploy/k8s/ and deploy/kserve/ state
the same facts (flags, ports, the drain timeout, the user, the image) in
several places, and nothing else would notice one of them drifting.

  consistency_test.py --graphserve PATH --graphserve-client PATH --metrics-source PATH

- Every command line they give graphserve or graphserve-client parses with
  the binary's own flag parser (run with --help appended: it parses every
  flag, then prints the usage and exits 0, or names the bad flag and exits 2).
- Each shutdown grace period covers its preStop sleep, the --exit-timeout-secs
  graphserve is given (or its default, read from --help) and 5 s to exit.
- The gRPC port (--grpc-port, or the default from --help) is the port that
  is exposed, published, named, probed and health-checked; the HTTP/REST port
  (--http-port, or its default) is served (--allow-http) and exposed,
  published and named wherever the gRPC port is; Services carry each port
  under its own number. The metrics port (--metrics-port, or its default) is
  served (--allow-metrics) and is the Deployment's and Service's port named
  `metrics`.
- The ServiceMonitor selects the Service by its labels and scrapes its port
  named `metrics`; the HPA scales the Deployment (which leaves its replicas
  to it) on the metric prometheus-adapter's rule makes, from counters
  graphserve exports (server/metrics.cc), over a window that holds at least
  four of the ServiceMonitor's scrapes.
- The image's runtime stage copies exactly bench/gpu_bundle.sh's graphserve,
  graphserve-capture, graphserve-client and lib/, and the builder runs that
  script after installing deploy/setup.sh's packages; the Deployment, the
  runtime and compose run the same image as the image's numeric user, with
  the model repository where they mount it.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# Time a process gets after draining to release the GPU and exit.
EXIT_MARGIN_SECS = 5
# The folder KServe's storage initializer fills from storageUri
# (pkg/constants: DefaultModelLocalMountPath).
KSERVE_MODEL_DIR = "/mnt/models"
# The binaries the image holds; bench/gpu_bundle.sh names them by target.
IMAGE_BINARIES = {
    "graphserve": "//server:graphserve",
    "graphserve-capture": "//capture_cli:graphserve-capture",
    "graphserve-client": "//client:graphserve-client",
}

# How the image's builder differs from deploy/setup.sh's package list: what it
# does without, what it installs under another name, and what it adds.
SETUP_ONLY_PACKAGES = {
    "curl": "the HTTP/REST endpoint's compatibility test",
    "libb64-0d": "perf_analyzer's, for the compatibility tests",
    "python3-venv": "the compatibility tests' venv",
    "openssl": "the gRPC TLS test's certificates (tests/grpc_tls_test.py)",
    "clang": "the sanitizer configs and the libFuzzer targets (fuzz/), not the image's build",
    "libclang-rt-14-dev": "clang's sanitizer and libFuzzer runtimes",
}
BUILDER_PACKAGE_NAMES = {
    "g++": "g++-12",  # the compiler the project builds with (Dockerfile)
}
BUILDER_ONLY_PACKAGES = {
    "binutils": "bench/gpu_bundle.sh strips the binaries",
    "gcc-12": "GCC 12's C compiler, which Debian's g++ brings along",
    "python3-pip": "deploy/cudnn_frontend.sh downloads the cuDNN frontend wheel (setup.sh uses the venv's pip)",
}

BINARIES = {}  # "graphserve" / "graphserve-client" -> path, from the command line
METRICS_SOURCE = []  # server/metrics.cc's path, from the command line
# The Service port the ServiceMonitor scrapes, by the name Prometheus
# Operator's endpoints refer to it with.
METRICS_PORT_NAME = "metrics"
# rate() over a window wants at least this many scrapes in it, so that one
# missed scrape still leaves two samples.
SCRAPES_PER_RATE_WINDOW = 4


def load_yaml(relative: str) -> dict:
    with open(os.path.join(HERE, relative), encoding="utf-8") as f:
        return yaml.safe_load(f)


def dockerfile_stages(path: str) -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions as (KEYWORD, rest), continuation lines
    joined and comments dropped; the stages in file order."""
    stages, current, pending = {}, None, ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("#") or (not line and not pending):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line, pending = pending + line, ""
            keyword, _, rest = line.partition(" ")
            keyword = keyword.upper()
            if keyword == "FROM":
                words = rest.split()
                current = words[2] if len(words) == 3 and words[1].upper() == "AS" else rest
                stages[current] = []
            elif current is not None:
                stages[current].append((keyword, rest.strip()))
    return stages


def instructions(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [rest for key, rest in stage if key == keyword]


def option(args: list[str], flag: str) -> str | None:
    """The value a command line gives `flag` (`--flag V` or `--flag=V`)."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None


def help_default(binary: str, flag: str) -> str:
    """A flag's default as the binary's --help prints it (a boolean flag
    takes no VALUE)."""
    usage = subprocess.run([BINARIES[binary], "--help"], capture_output=True, text=True,
                           check=True).stdout
    entry = rf"^  {re.escape(flag)}(?: VALUE)?\n(?:      .*\n)*?      .*\(default: ([^)]*)\)$"
    match = re.search(entry, usage, re.MULTILINE)
    if match is None:
        raise AssertionError(f"{binary} --help lists no default for {flag}")
    return match.group(1)


def served_setting(args: list[str], flag: str) -> int:
    """What graphserve runs with for `flag` given `args`."""
    value = option(args, flag)
    return int(value if value is not None else help_default("graphserve", flag))


def serves_http(args: list[str]) -> bool:
    """Whether graphserve serves HTTP/REST given `args`: --allow-http alone
    means true, --allow-http=V sets V, the last one wins (common/command_line.cc)."""
    value = help_default("graphserve", "--allow-http")
    for arg in args:
        if arg == "--allow-http":
            value = "true"
        elif arg.startswith("--allow-http="):
            value = arg.split("=", 1)[1]
    return value.lower() in ("true", "t", "yes", "y", "1")


def serves_metrics(args: list[str]) -> bool:
    """Whether graphserve serves /metrics given `args` (as serves_http)."""
    value = help_default("graphserve", "--allow-metrics")
    for arg in args:
        if arg == "--allow-metrics":
            value = "true"
        elif arg.startswith("--allow-metrics="):
            value = arg.split("=", 1)[1]
    return value.lower() in ("true", "t", "yes", "y", "1")


def served_ports(args: list[str]) -> tuple[int, int]:
    """(HTTP/REST port, gRPC port) graphserve listens on given `args`."""
    return served_setting(args, "--http-port"), served_setting(args, "--grpc-port")


def pre_stop_secs(container: dict) -> int:
    """Seconds a container's preStop hook sleeps (0 without one)."""
    pre_stop = (container.get("lifecycle") or {}).get("preStop")
    if pre_stop is None:
        return 0
    if "sleep" in pre_stop:
        return int(pre_stop["sleep"]["seconds"])
    command = pre_stop["exec"]["command"]
    if len(command) != 2 or os.path.basename(command[0]) != "sleep":
        raise AssertionError(f"preStop runs {command}, not `sleep N`: cannot time it")
    return int(command[1])


def duration_secs(text: str) -> int:
    """Compose's duration ("40s", "1m30s") in seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if parts is None or not text:
        raise AssertionError(f"cannot read the duration {text!r}")
    hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    return hours * 3600 + minutes * 60 + seconds


class Files:
    """Everything the tests read, read once."""

    stages = dockerfile_stages(os.path.join(HERE, "Dockerfile"))
    runtime_stage = list(stages.values())[-1]
    compose = load_yaml("compose.yaml")["services"]["graphserve"]
    deployment = load_yaml("k8s/deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    service = load_yaml("k8s/service.yaml")
    service_monitor = load_yaml("k8s/service-monitor.yaml")
    autoscaler = load_yaml("k8s/horizontal-pod-autoscaler.yaml")
    adapter_rules = load_yaml("prometheus-adapter-values.yaml")["rules"]["custom"]
    runtime = load_yaml("kserve/cluster-serving-runtime.yaml")
    runtime_container = runtime["spec"]["containers"][0]
    isvc = load_yaml("kserve/inference-service.yaml")

    @classmethod
    def image_entrypoint(cls) -> list[str]:
        (entrypoint,) = instructions(cls.runtime_stage, "ENTRYPOINT")
        return json.loads(entrypoint)

    @classmethod
    def image_command(cls) -> list[str]:
        (command,) = instructions(cls.runtime_stage, "CMD")
        return json.loads(command)

    @classmethod
    def healthcheck(cls) -> list[str]:
        (healthcheck,) = instructions(cls.runtime_stage, "HEALTHCHECK")
        _, _, command = healthcheck.partition(" CMD ")
        return json.loads(command)

    @classmethod
    def graphserve_command_lines(cls) -> dict[str, list[str]]:
        """Where each file runs graphserve -> the arguments it gives."""
        return {
            "Dockerfile (ENTRYPOINT, CMD)": cls.image_entrypoint()[1:] + cls.image_command(),
            "compose.yaml": cls.compose["command"],
            "k8s/deployment.yaml": cls.container["args"],
            "kserve/cluster-serving-runtime.yaml": cls.runtime_container["args"],
        }


class FlagsTest(unittest.TestCase):
    def assert_parses(self, binary: str, args: list[str], where: str):
        run = subprocess.run([BINARIES[binary]] + args + ["--help"], capture_output=True,
                             text=True, check=False)
        self.assertEqual(run.returncode, 0,
                         f"{where}: `{binary} {shlex.join(args)}` does not parse: {run.stderr}")

    def test_image_runs_graphserve(self):
        self.assertEqual(Files.image_entrypoint()[0], "graphserve")

    def test_graphserve_command_lines_parse(self):
        for where, args in Files.graphserve_command_lines().items():
            self.assert_parses("graphserve", args, where)

    def test_healthcheck_parses(self):
        command = Files.healthcheck()
        self.assertEqual(command[0], "graphserve-client")
        self.assert_parses("graphserve-client", command[1:], "Dockerfile HEALTHCHECK")

    def test_a_typo_would_be_caught(self):
        run = subprocess.run([BINARIES["graphserve"], "--exit-timeout-sec", "30", "--help"],
                             capture_output=True, check=False)
        self.assertEqual(run.returncode, 2)


class DrainTest(unittest.TestCase):
    def test_deployment_grace_covers_the_drain(self):
        needed = (pre_stop_secs(Files.container)
                  + served_setting(Files.container["args"], "--exit-timeout-secs")
                  + EXIT_MARGIN_SECS)
        self.assertGreaterEqual(Files.pod["terminationGracePeriodSeconds"], needed)

    def test_inference_service_grace_covers_the_drain(self):
        predictor = Files.isvc["spec"]["predictor"]
        needed = (pre_stop_secs(predictor["model"])
                  + served_setting(Files.runtime_container["args"], "--exit-timeout-secs")
                  + EXIT_MARGIN_SECS)
        self.assertGreaterEqual(predictor["terminationGracePeriodSeconds"], needed)

    def test_compose_grace_covers_the_drain(self):
        needed = (served_setting(Files.compose["command"], "--exit-timeout-secs")
                  + EXIT_MARGIN_SECS)
        self.assertGreaterEqual(duration_secs(Files.compose["stop_grace_period"]), needed)

    def test_image_drains_on_sigterm(self):
        self.assertEqual(instructions(Files.runtime_stage, "STOPSIGNAL"), ["SIGTERM"])


class PortsTest(unittest.TestCase):
    def probe_ports(self, container: dict) -> list[int]:
        return [container[probe]["grpc"]["port"] for probe in
                ("startupProbe", "readinessProbe", "livenessProbe") if probe in container]

    def image_exposed(self) -> set[int]:
        return {int(port) for line in instructions(Files.runtime_stage, "EXPOSE")
                for port in line.split()}

    def test_image(self):
        args = Files.image_command()
        http_port, grpc_port = served_ports(args)
        self.assertTrue(serves_http(args))
        self.assertLessEqual({http_port, grpc_port}, self.image_exposed())
        self.assertEqual(option(Files.healthcheck(), "--url"), f"localhost:{grpc_port}")

    def test_compose(self):
        args = Files.compose["command"]
        http_port, grpc_port = served_ports(args)
        self.assertTrue(serves_http(args))
        published = {int(str(p).rsplit(":", 1)[-1]) for p in Files.compose["ports"]}
        self.assertLessEqual({http_port, grpc_port}, published)

    def test_deployment_and_service(self):
        args = Files.container["args"]
        http_port, grpc_port = served_ports(args)
        self.assertTrue(serves_http(args))
        named = {p["name"]: p["containerPort"] for p in Files.container["ports"]}
        self.assertEqual((named["http"], named["grpc"]), (http_port, grpc_port))
        self.assertEqual(self.probe_ports(Files.container), [grpc_port] * 3)
        service = {p["name"]: p for p in Files.service["spec"]["ports"]}
        self.assertLessEqual({"http", "grpc"}, set(service))
        for name, port in service.items():
            self.assertIn(port["targetPort"], named, f"Service port {name}")
            self.assertEqual(port["port"], named[port["targetPort"]],
                             f"Service port {name} carries its container port's number")
        self.assertEqual(set(named.values()), self.image_exposed())

    def test_kserve_runtime(self):
        # KServe's predictor Service serves the first port on 80, the address
        # KServe routes to: REST, as KServe's own runtimes serve there; gRPC
        # follows on its own number (cluster-serving-runtime.yaml).
        args = Files.runtime_container["args"]
        http_port, grpc_port = served_ports(args)
        self.assertTrue(serves_http(args))
        ports = [(p["name"], p["containerPort"]) for p in Files.runtime_container["ports"]]
        self.assertEqual(ports, [("http1", http_port), ("h2c", grpc_port)])
        self.assertEqual(self.probe_ports(Files.runtime_container), [grpc_port] * 2)
        self.assertLessEqual({"v2", "grpc-v2"}, set(Files.runtime["spec"]["protocolVersions"]))


def exported_metrics() -> set[str]:
    """The metric names graphserve's /metrics serves: the string literals
    server/metrics.cc names its families with."""
    with open(METRICS_SOURCE[0], encoding="utf-8") as f:
        return set(re.findall(r'"(nv_[a-z0-9_]+)"', f.read()))


def matches_labels(selector: dict, labels: dict) -> bool:
    """Whether a LabelSelector's matchLabels hold in `labels` (the
    ServiceMonitor uses no matchExpressions; a selector with them fails)."""
    if selector.get("matchExpressions"):
        raise AssertionError("matchExpressions: teach matches_labels to read them")
    return all(labels.get(key) == value for key, value in selector["matchLabels"].items())


class MonitoringTest(unittest.TestCase):
    def test_graphserve_serves_metrics_on_the_port_named_metrics(self):
        args = Files.container["args"]
        self.assertTrue(serves_metrics(args))
        named = {p["name"]: p["containerPort"] for p in Files.container["ports"]}
        self.assertEqual(named[METRICS_PORT_NAME], served_setting(args, "--metrics-port"))
        service = {p["name"]: p for p in Files.service["spec"]["ports"]}
        self.assertIn(METRICS_PORT_NAME, service)
        self.assertEqual(service[METRICS_PORT_NAME]["port"], named[METRICS_PORT_NAME])

    def test_service_monitor_scrapes_the_services_metrics_port(self):
        spec = Files.service_monitor["spec"]
        self.assertTrue(matches_labels(spec["selector"], Files.service["metadata"]["labels"]),
                        "the ServiceMonitor's selector must match the Service's labels")
        service_ports = {p["name"] for p in Files.service["spec"]["ports"]}
        for endpoint in spec["endpoints"]:
            self.assertIn(endpoint["port"], service_ports,
                          "a ServiceMonitor endpoint's port names a port of the Service")
            self.assertEqual(endpoint["port"], METRICS_PORT_NAME)
            self.assertEqual(endpoint.get("path", "/metrics"), "/metrics")
        # Without a namespaceSelector it watches its own namespace, where
        # kubectl apply -f deploy/k8s/ puts the Service too.
        self.assertNotIn("namespaceSelector", spec)

    def test_autoscaler_scales_the_deployment(self):
        target = Files.autoscaler["spec"]["scaleTargetRef"]
        self.assertEqual((target["apiVersion"], target["kind"], target["name"]),
                         (Files.deployment["apiVersion"], Files.deployment["kind"],
                          Files.deployment["metadata"]["name"]))
        self.assertNotIn("replicas", Files.deployment["spec"],
                         "with an HPA, a Deployment's replicas would reset its scaling on "
                         "every kubectl apply")

    def test_autoscaler_metric_comes_from_the_adapter_rule(self):
        made = {rule["name"]["as"]: rule for rule in Files.adapter_rules}
        for metric in Files.autoscaler["spec"]["metrics"]:
            self.assertEqual(metric["type"], "Pods")
            self.assertIn(metric["pods"]["metric"]["name"], made,
                          "prometheus-adapter-values.yaml makes no such metric")

    def test_adapter_rule_reads_exported_counters_per_pod(self):
        exported = exported_metrics()
        self.assertIn("nv_inference_queue_duration_us", exported)  # the reader works
        for rule in Files.adapter_rules:
            series = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)", rule["seriesQuery"]).group(1)
            queried = set(re.findall(r"\b(nv_[a-z0-9_]+)\{", rule["metricsQuery"]))
            self.assertLessEqual({series} | queried, exported,
                                 "the rule reads a metric graphserve does not export")
            self.assertEqual(rule["resources"]["overrides"]["pod"], {"resource": "pod"})
            self.assertEqual(rule["resources"]["overrides"]["namespace"],
                             {"resource": "namespace"})

    def test_rate_window_holds_enough_scrapes(self):
        intervals = [duration_secs(e["interval"])
                     for e in Files.service_monitor["spec"]["endpoints"]]
        for rule in Files.adapter_rules:
            windows = re.findall(r"\[([0-9hms]+)\]", rule["metricsQuery"])
            self.assertTrue(windows, "the rule has no range window")
            for window in windows:
                self.assertGreaterEqual(duration_secs(window),
                                        SCRAPES_PER_RATE_WINDOW * max(intervals),
                                        f"window [{window}]")


class ImageTest(unittest.TestCase):
    def test_runtime_stage_holds_exactly_the_bundle(self):
        copies = [shlex.split(line) for line in instructions(Files.runtime_stage, "COPY")]
        self.assertEqual(instructions(Files.runtime_stage, "ADD"), [])
        sources = set()
        for words in copies:
            self.assertEqual(words[0], "--from=bundle", f"COPY {shlex.join(words)}")
            sources.update(words[1:-1])
        expected = {f"/graphserve-gpu/bin/{name}" for name in IMAGE_BINARIES}
        self.assertEqual(sources, expected | {"/graphserve-gpu/lib/"})

    def test_bundle_stage_is_what_gpu_bundle_sh_staged(self):
        self.assertEqual(instructions(Files.stages["bundle"], "COPY"),
                         ["--from=builder /src/.bundle/graphserve-gpu /graphserve-gpu"])
        self.assertTrue(any(re.search(r"(^|\s)bench/gpu_bundle\.sh$", line)
                            for line in instructions(Files.stages["builder"], "RUN")))

    def test_builder_installs_what_setup_sh_installs(self):
        with open(os.path.join(HERE, "setup.sh"), encoding="utf-8") as f:
            block = re.search(r"^PACKAGES=\((.*?)^\)", f.read(), re.MULTILINE | re.DOTALL)
        self.assertIsNotNone(block, "deploy/setup.sh has no PACKAGES")
        setup = {line.split("#")[0].strip() for line in block.group(1).splitlines()} - {""}
        (install,) = [line for line in instructions(Files.stages["builder"], "RUN")
                      if "apt-get install" in line]
        builder = set(install.split("--no-install-recommends", 1)[1].split("&&")[0].split())
        expected = {BUILDER_PACKAGE_NAMES.get(p, p) for p in setup - set(SETUP_ONLY_PACKAGES)}
        self.assertEqual(builder, expected | set(BUILDER_ONLY_PACKAGES),
                         "the Dockerfile's builder must install deploy/setup.sh's packages "
                         "(less SETUP_ONLY_PACKAGES, plus BUILDER_ONLY_PACKAGES)")

    def test_gpu_bundle_sh_builds_the_binaries(self):
        with open(os.path.join(REPO, "bench", "gpu_bundle.sh"), encoding="utf-8") as f:
            script = f.read()
        tools = re.search(r"^TOOL_TARGETS=\((.*?)^\)", script, re.MULTILINE | re.DOTALL)
        self.assertIsNotNone(tools, "bench/gpu_bundle.sh has no TOOL_TARGETS")
        for target in IMAGE_BINARIES.values():
            self.assertIn(target, tools.group(1).split())

    def test_same_image_everywhere(self):
        self.assertEqual(Files.container["image"], Files.compose["image"])
        self.assertEqual(Files.runtime_container["image"], Files.compose["image"])

    def test_same_user_everywhere(self):
        (user,) = instructions(Files.runtime_stage, "USER")
        uid, _, gid = user.partition(":")
        self.assertTrue(uid.isdigit(), "USER must be numeric for runAsNonRoot")
        pod_security = Files.pod["securityContext"]
        self.assertEqual((pod_security["runAsUser"], pod_security["runAsGroup"]),
                         (int(uid), int(gid)))
        runtime_security = Files.runtime_container["securityContext"]
        self.assertEqual((runtime_security["runAsUser"], runtime_security["runAsGroup"]),
                         (int(uid), int(gid)))

    def test_model_repository_is_where_it_is_mounted(self):
        mounts = {m["mountPath"] for m in Files.container["volumeMounts"]}
        self.assertIn(option(Files.container["args"], "--model-repository"), mounts)
        targets = {v["target"] for v in Files.compose["volumes"]}
        self.assertIn(option(Files.compose["command"], "--model-repository"), targets)
        self.assertEqual(option(Files.runtime_container["args"], "--model-repository"),
                         KSERVE_MODEL_DIR)
        self.assertTrue(any(re.search(r"mkdir /models\b", line)
                            for line in instructions(Files.runtime_stage, "RUN")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--graphserve", required=True)
    parser.add_argument("--graphserve-client", required=True)
    parser.add_argument("--metrics-source", required=True, help="server/metrics.cc")
    args, rest = parser.parse_known_args()
    BINARIES.update({"graphserve": args.graphserve, "graphserve-client": args.graphserve_client})
    METRICS_SOURCE.append(args.metrics_source)
    unittest.main(argv=[sys.argv[0]] + rest)
