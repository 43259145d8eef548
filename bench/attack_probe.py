"""Attack probe: a running graphserve against hostile clients, case by case.

Starts graphserve on the demo repository (mlp, dlrm_dense) with explicit model
control and throws hostile inputs at all of its ports: HTTP/REST framing
(request smuggling, broken pipelining, slow clients, oversized and compressed
bodies), the KServe v2 JSON and binary-tensor bodies, gRPC ModelInfer and
ModelStreamInfer, hand-made HTTP/2 frames on the gRPC port, shared memory,
model control (path traversal, hostile load configs, load/unload storms), the
metrics port, and restricted-API bypass attempts on a second server.

Each case records what was sent, what a correct server answers, what this one
answered, and pass/fail. After EVERY case the server must still run, answer
GET /v2/health/ready with 200, and answer a well-formed gRPC mlp inference
right (onnxruntime on the repository's model.onnx is the reference; without
onnxruntime, the server's first answer). A case after which it does not fails;
a server that still runs but lost a model gets mlp and dlrm_dense reloaded, any
other is killed and restarted for the next case (both recorded).

    python3 bench/attack_probe.py --server BIN --make-repository BIN \\
        --device cuda:0 --out DIR

Writes DIR/attack_probe.json and prints a summary; exits 0 only when every
case passed and the server is alive at the end. --only SUBSTRING runs the
cases whose names contain it (for development); --time-budget (150 s) marks the
cases left when it runs out as not run (failed).
"""

import argparse
import base64
import gzip
import http.client
import json
import os
import random
import re
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
import zlib

import grpc
import numpy as np
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import graphserve_process as gp  # noqa: E402

try:
    import onnxruntime  # noqa: F401
    HAVE_ORT = True
except ImportError:  # the reference is then the server's own first answer
    HAVE_ORT = False

TOLERANCE = 1e-4          # float32 on the GPU (TF32 off) against onnxruntime on the CPU
SOCKET_TIMEOUT = 5.0      # every socket read or write
CASE_TIMEOUT = 40.0       # a case that takes longer counts as wedged
TIME_BUDGET = 150.0       # the whole run
U64 = (1 << 64) - 1
GOOD_BATCH = 3


# --------------------------------------------------------------------------
# Raw HTTP/1.1


def parse_http_responses(buf, head_indices=()):
    """The complete responses in `buf`, in order: [{status, headers, body}].
    A trailing incomplete response is left out; garbage ends the parse."""
    out, pos = [], 0
    while pos < len(buf):
        end = buf.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        lines = buf[pos:end].decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/(\d)\.(\d) (\d{3})", lines[0])
        if not m:
            out.append({"status": None, "garbage": buf[pos:pos + 80].decode("latin-1")})
            break
        code = int(m.group(3))
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.setdefault(name.strip().lower(), []).append(value.strip())
        start = end + 4
        if 100 <= code < 200:
            out.append({"status": code, "headers": headers, "body": b""})
            pos = start
            continue
        if len(out) in head_indices or code in (204, 304):
            body, pos = b"", start
        elif "chunked" in ",".join(headers.get("transfer-encoding", [])).lower():
            body, p, done = b"", start, False
            while True:
                eol = buf.find(b"\r\n", p)
                if eol < 0:
                    break
                size = int(buf[p:eol].split(b";")[0] or b"0", 16)
                if size == 0:
                    tail = buf.find(b"\r\n\r\n", eol)
                    if tail >= 0:
                        pos, done = tail + 4, True
                    break
                if len(buf) < eol + 2 + size + 2:
                    break
                body += buf[eol + 2:eol + 2 + size]
                p = eol + 2 + size + 2
            if not done:
                break
        elif "content-length" in headers:
            n = int(headers["content-length"][0])
            if len(buf) < start + n:
                break
            body, pos = buf[start:start + n], start + n
        else:  # until close: the caller knows whether it closed
            body, pos = buf[start:], len(buf)
        out.append({"status": code, "headers": headers, "body": body})
    return out


def raw_http(port, data, want=1, timeout=SOCKET_TIMEOUT, grace=0.15, head_indices=(),
             pieces=None, piece_delay=0.0):
    """Sends `data` (or `pieces`, `piece_delay` apart) on a fresh connection
    while reading what comes back, until `want` responses plus `grace`
    seconds, a close, or `timeout`. {responses, closed, timed_out, error}."""
    result = {"responses": [], "closed": False, "timed_out": False, "error": None,
              "raw_bytes": 0}
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.settimeout(0.2)
    send_error = []

    def sender():
        try:
            for i, piece in enumerate(pieces if pieces is not None else [data]):
                if i and piece_delay:
                    time.sleep(piece_delay)
                sock.sendall(piece)
        except OSError as e:
            send_error.append(type(e).__name__)

    thread = threading.Thread(target=sender, daemon=True)
    thread.start()
    buf = b""
    deadline = time.monotonic() + timeout
    settle = None
    while True:
        now = time.monotonic()
        if now > deadline:
            result["timed_out"] = True
            break
        if settle is not None and now > settle:
            break
        try:
            chunk = sock.recv(1 << 16)
        except socket.timeout:
            chunk = None
        except OSError as e:
            result["error"] = type(e).__name__
            result["closed"] = True
            break
        if chunk == b"":
            result["closed"] = True
            break
        if chunk:
            buf += chunk
            finals = [r for r in parse_http_responses(buf, head_indices)
                      if r.get("status") is None or r["status"] >= 200]
            if settle is None and len(finals) >= want:
                settle = time.monotonic() + grace
    thread.join(timeout=1)
    sock.close()
    result["responses"] = parse_http_responses(buf, head_indices)
    result["raw_bytes"] = len(buf)
    if send_error:
        result["send_error"] = send_error[0]
    return result


def open_many(port, n, threads=8, first=b""):
    """n connections opened from `threads` threads at once, each sending
    `first`: (sockets, connect latencies in seconds, failures)."""
    socks, lat, failures = [], [], []
    lock = threading.Lock()

    def worker(count):
        for _ in range(count):
            t = time.monotonic()
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)
                if first:
                    s.sendall(first)
            except OSError as e:
                with lock:
                    failures.append(type(e).__name__)
                continue
            with lock:
                socks.append(s)
                lat.append(time.monotonic() - t)
    per = [n // threads + (1 if i < n % threads else 0) for i in range(threads)]
    pool = [threading.Thread(target=worker, args=(k,), daemon=True) for k in per]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=30)
    return socks, lat, failures


def summary(res):
    """One line for a raw_http result."""
    codes = [r.get("status") for r in res["responses"]]
    parts = [f"statuses={codes}"]
    for r in res["responses"][:3]:
        if r.get("status") and r["status"] >= 300 and r.get("body"):
            parts.append(f"body={r['body'][:100]!r}")
            break
    if res["closed"]:
        parts.append("closed")
    if res["timed_out"]:
        parts.append("timed out")
    if res.get("error"):
        parts.append(res["error"])
    if res.get("send_error"):
        parts.append(f"send:{res['send_error']}")
    return " ".join(parts)


def statuses(res):
    return [r.get("status") for r in res["responses"]]


def refused_with(res, codes, allow_drop=False):
    """One response, its status in `codes`, nothing after it; or, with
    allow_drop, a close with no response (a server that drops a connection
    it will not read is refusing too)."""
    got = statuses(res)
    if len(got) == 1 and got[0] in codes:
        return True
    return allow_drop and not got and res["closed"]


def req(method, path, headers=(), body=b"", version="HTTP/1.1", host=True):
    lines = [f"{method} {path} {version}"]
    if host:
        lines.append("Host: 127.0.0.1")
    lines += list(headers)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body


# --------------------------------------------------------------------------
# Raw HTTP/2 (the gRPC port)

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1


def h2_frame(ftype, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + \
        (stream & 0x7FFFFFFF).to_bytes(4, "big") + payload


def hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_headers(pairs):
    """Literal header fields without indexing, no Huffman."""
    out = b""
    for name, value in pairs:
        name, value = name.encode("latin-1"), value.encode("latin-1")
        out += b"\x00" + hpack_int(len(name), 7) + name + hpack_int(len(value), 7) + value
    return out


def grpc_header_block(method="ModelInfer", extra=()):
    return hpack_headers([(":method", "POST"), (":scheme", "http"),
                          (":path", f"/inference.GRPCInferenceService/{method}"),
                          (":authority", "127.0.0.1"), ("content-type", "application/grpc"),
                          ("te", "trailers"), *extra])


def grpc_message(payload, compressed=0, length=None):
    return bytes([compressed]) + struct.pack(">I", len(payload) if length is None else length) + payload


class H2Conn:
    """A hand-driven HTTP/2 connection: frames out, frames in (types only)."""

    def __init__(self, port, settings=b""):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)
        self.frames = []
        self.buf = b""
        self.closed = False
        self.send_error = None
        self.send(H2_PREFACE + h2_frame(SETTINGS, 0, 0, settings))

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError as e:
            self.send_error = type(e).__name__
            return False

    def pump(self, seconds, until=None):
        """Reads frames for `seconds` or until until(frames) is true or a close."""
        deadline = time.monotonic() + seconds
        self.sock.settimeout(0.1)
        while time.monotonic() < deadline and not self.closed:
            try:
                chunk = self.sock.recv(1 << 16)
            except socket.timeout:
                chunk = None
            except OSError:
                chunk = b""
            if chunk == b"":
                self.closed = True
                break
            if chunk:
                self.buf += chunk
                while len(self.buf) >= 9:
                    n = int.from_bytes(self.buf[:3], "big")
                    if len(self.buf) < 9 + n:
                        break
                    ftype, flags = self.buf[3], self.buf[4]
                    sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                    payload = self.buf[9:9 + n]
                    self.buf = self.buf[9 + n:]
                    self.frames.append((ftype, flags, sid, payload))
                    if ftype == SETTINGS and not flags & ACK:
                        self.send(h2_frame(SETTINGS, ACK, 0))
                    if ftype == PING and not flags & ACK:
                        self.send(h2_frame(PING, ACK, 0, payload))
            if until and until(self.frames):
                break
        return self.frames

    def goaway_code(self):
        for ftype, _, _, payload in self.frames:
            if ftype == GOAWAY and len(payload) >= 8:
                return int.from_bytes(payload[4:8], "big")
        return None

    def stream_frames(self, sid):
        return [(t, f) for t, f, s, _ in self.frames if s == sid]

    def describe(self):
        names = {DATA: "DATA", HEADERS: "HEADERS", RST_STREAM: "RST_STREAM", SETTINGS: "SETTINGS",
                 PING: "PING", GOAWAY: "GOAWAY", WINDOW_UPDATE: "WINDOW_UPDATE"}
        counts = {}
        for ftype, _, _, _ in self.frames:
            counts[names.get(ftype, str(ftype))] = counts.get(names.get(ftype, str(ftype)), 0) + 1
        text = f"frames={counts}"
        if self.goaway_code() is not None:
            text += f" goaway_error={self.goaway_code()}"
        if self.closed:
            text += " closed"
        if self.send_error:
            text += f" send:{self.send_error}"
        return text

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# The probe: a server, its references, and the checks after each case


class Probe:
    def __init__(self, args):
        self.args = args
        self.repository = gp.make_demo_repository(args.make_repository)
        self.flags = ["--model-control-mode", "explicit", "--load-model", "mlp",
                      "--load-model", "dlrm_dense"]
        self.server = None
        self.channel = None
        self.stub = None
        self.restarts = 0
        self.tmp = tempfile.mkdtemp(prefix="attack_probe_")
        rng = np.random.default_rng(1234)
        self.x_good = rng.uniform(-1, 1, size=(GOOD_BATCH, 512)).astype(np.float32)
        self.sessions = {}
        self.reference_kind = "onnxruntime" if HAVE_ORT else "server's first answer"
        self.start_server()
        self.y_good = self.reference("mlp", {"x": self.x_good})["y"]
        for model in ("mlp", "dlrm_dense"):
            status, _, data = self.http("GET", f"/v2/models/{model}/config")
            if status == 200:
                BASE_CONFIGS[model] = json.loads(data)

    # -- server lifetime
    def start_server(self):
        server = gp.ServerProcess(self.args.server, self.repository, self.flags)
        server.command[server.command.index("--device") + 1] = self.args.device
        server.start()
        self.server = server
        if self.channel is not None:
            self.channel.close()
        self.channel = grpc.insecure_channel(
            server.url, options=[("grpc.max_receive_message_length", 128 << 20),
                                 ("grpc.max_send_message_length", 128 << 20)])
        self.stub = pbg.GRPCInferenceServiceStub(self.channel)

    def kill_server(self):
        if self.server and self.server.process and self.server.process.poll() is None:
            self.server.process.kill()
            try:
                self.server.process.wait(timeout=10)
            except Exception:  # noqa: BLE001
                pass

    def restart(self):
        self.kill_server()
        self.restarts += 1
        self.start_server()

    @property
    def http_port(self):
        return self.server.http_port

    @property
    def grpc_port(self):
        return self.server.port

    @property
    def metrics_port(self):
        return self.server.metrics_port

    def rss_mib(self):
        try:
            with open(f"/proc/{self.server.process.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    # -- references
    def reference(self, model, feeds):
        if HAVE_ORT:
            if model not in self.sessions:
                import onnxruntime
                self.sessions[model] = onnxruntime.InferenceSession(
                    os.path.join(self.repository, model, "1", "model.onnx"),
                    providers=["CPUExecutionProvider"])
            session = self.sessions[model]
            names = [o.name for o in session.get_outputs()]
            return dict(zip(names, session.run(names, feeds)))
        # Without onnxruntime the server's answer on a fresh connection is the reference.
        code, _, resp = self.grpc_infer(infer_request(model, feeds))
        if code != grpc.StatusCode.OK:
            raise RuntimeError(f"no reference for {model}: {code}")
        return decode_outputs(resp)

    def mlp_ref(self, x):
        return self.reference("mlp", {"x": x})["y"]

    # -- clients
    def grpc_call(self, method, request, timeout=10.0, metadata=None, **kw):
        try:
            resp = getattr(self.stub, method)(request, timeout=timeout, metadata=metadata, **kw)
            return grpc.StatusCode.OK, "", resp
        except grpc.RpcError as e:
            return e.code(), (e.details() or "")[:200], None

    def grpc_infer(self, request, timeout=10.0, metadata=None, **kw):
        return self.grpc_call("ModelInfer", request, timeout, metadata, **kw)

    def http(self, method, path, body=None, headers=None, port=None, timeout=SOCKET_TIMEOUT):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.http_port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def http_infer(self, model, body, headers=None):
        return self.http("POST", f"/v2/models/{model}/infer", body, headers)

    def load(self, model, config=None):
        body = json.dumps({"parameters": {"config": config}}) if config is not None else b""
        status, _, data = self.http("POST", f"/v2/repository/models/{model}/load", body,
                                    timeout=60)
        return status, data

    def model_ready(self, model):
        try:
            return self.http("GET", f"/v2/models/{model}/ready")[0] == 200
        except OSError:
            return False

    def mlp_right(self, y, x):
        return y is not None and np.shape(y) == (x.shape[0], 1) and \
            gp.relative_error(y, self.mlp_ref(x)) <= TOLERANCE

    # -- the check after every case
    def health(self):
        """(ok, text): alive, ready 200, one right mlp inference."""
        if self.server.process.poll() is not None:
            return False, f"server exited with {self.server.process.returncode}"
        try:
            status = self.http("GET", "/v2/health/ready")[0]
        except OSError as e:
            return False, f"GET /v2/health/ready failed: {type(e).__name__}: {e}"
        if status != 200:
            return False, f"GET /v2/health/ready answered {status}"
        code, details, resp = self.grpc_infer(infer_request("mlp", {"x": self.x_good}))
        if code != grpc.StatusCode.OK:
            return False, f"mlp inference: {code.name} {details}"
        y = decode_outputs(resp).get("y")
        if y is None or y.shape != self.y_good.shape:
            return False, f"mlp inference: output shape {None if y is None else y.shape}"
        err = gp.relative_error(y, self.y_good)
        if err > TOLERANCE:
            return False, f"mlp inference: relative error {err:.2e} against the {self.reference_kind}"
        return True, "alive, ready, mlp right"


def infer_request(model, feeds, outputs=(), model_version=""):
    request = pb.ModelInferRequest(model_name=model, model_version=model_version)
    for name, array in feeds.items():
        t = request.inputs.add(name=name, datatype="FP32")
        t.shape.extend(array.shape)
        request.raw_input_contents.append(np.ascontiguousarray(array, np.float32).tobytes())
    for name in outputs:
        request.outputs.add(name=name)
    return request


def decode_outputs(response):
    out = {}
    for i, o in enumerate(response.outputs):
        if o.datatype == "FP32" and i < len(response.raw_output_contents):
            out[o.name] = np.frombuffer(response.raw_output_contents[i], np.float32).reshape(
                tuple(o.shape))
    return out


def json_infer(x, name="x", datatype="FP32", shape=None, **extra):
    body = {"inputs": [{"name": name, "datatype": datatype,
                        "shape": list(x.shape) if shape is None else shape,
                        "data": x.ravel().tolist()}]}
    body.update(extra)
    return body


def json_y(data):
    try:
        out = json.loads(data)["outputs"][0]
        return np.asarray(out["data"], np.float32).reshape(out["shape"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def binary_infer(x, size=None, header_len=None, tail=b"", params=None):
    tensor = {"name": "x", "datatype": "FP32", "shape": list(x.shape),
              "parameters": {"binary_data_size": x.nbytes if size is None else size}}
    if params:
        tensor["parameters"].update(params)
    head = json.dumps({"inputs": [tensor]}).encode()
    body = head + x.tobytes() + tail
    hl = str(len(head)) if header_len is None else header_len
    return body, {"Inference-Header-Content-Length": hl, "Content-Type": "application/octet-stream"}


def is4xx(code):
    return code is not None and 400 <= code < 500


# --------------------------------------------------------------------------
# The cases. Each returns (passed, observed); `sent` and `expected` are its
# declaration's.

CASES = []


def case(group, name, sent, expected):
    def register(fn):
        CASES.append({"group": group, "name": name, "sent": sent, "expected": expected, "fn": fn})
        return fn
    return register


class Variants:
    """Several hostile variants in one case: each must pass."""

    def __init__(self):
        self.lines, self.ok = [], True

    def add(self, label, passed, observed):
        self.ok &= bool(passed)
        self.lines.append(f"{'ok' if passed else 'FAIL'} {label}: {observed}")

    def result(self):
        return self.ok, " | ".join(self.lines)


SMUGGLED = b"GET /v2/models/dlrm_dense HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

# ---- HTTP/1.1 framing --------------------------------------------------------


@case("http-framing", "te_and_cl_smuggle",
      "POST /v2/repository/index with Content-Length: 5 and Transfer-Encoding: chunked; the "
      "chunked body ends early and a GET /v2/models/dlrm_dense hides behind it",
      "one 400, connection closed, the hidden GET never answered")
def _(p):
    res = raw_http(p.http_port, req("POST", "/v2/repository/index",
                                    ["Content-Length: 5", "Transfer-Encoding: chunked"],
                                    b"0\r\n\r\n" + SMUGGLED), want=1, grace=0.8)
    return refused_with(res, {400}) and res["closed"], summary(res)


@case("http-framing", "content_length_duplicates",
      "Content-Length 2 and 40 on one request; then 'Content-Length: 2, 2'; then two equal "
      "Content-Length headers, each with a GET hidden after the 2-byte body",
      "differing: one 400 and close; '2, 2' and equal pairs: 400, or 200 (the GET after it is "
      "then a pipelined request: answered or not, pipelining is judged by pipelined_gets)")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("POST", "/v2/repository/index",
                                    ["Content-Length: 2", "Content-Length: 40"], b"{}" + SMUGGLED))
    v.add("2 and 40", refused_with(res, {400}), summary(res))
    for label, hdrs in (("'2, 2'", ["Content-Length: 2, 2"]),
                        ("2 and 2", ["Content-Length: 2", "Content-Length: 2"])):
        res = raw_http(p.http_port, req("POST", "/v2/repository/index", hdrs, b"{}" + SMUGGLED),
                       want=2, timeout=2.5)
        got = statuses(res)
        v.add(label, got in ([400], [200], [200, 200]), summary(res))
    return v.result()


@case("http-framing", "content_length_malformed",
      "Content-Length values -1, +2, 0x2, 2^64+1, ' 2 2', 1e3 on POST /v2/repository/index",
      "400 (or 413 for the overflow) for each, one response, no 5xx")
def _(p):
    v = Variants()
    for value in ("-1", "+2", "0x2", str((1 << 64) + 1), "2 2", "1e3"):
        res = raw_http(p.http_port, req("POST", "/v2/repository/index",
                                        [f"Content-Length: {value}"], b"{}"))
        v.add(value, refused_with(res, {400, 413}), summary(res))
    return v.result()


@case("http-framing", "content_length_huge_declared",
      "POST /v2/models/mlp/infer declaring Content-Length 10^15 with 2 bytes sent",
      "413 at once (before any body is read), within 3 s")
def _(p):
    t = time.monotonic()
    res = raw_http(p.http_port, req("POST", "/v2/models/mlp/infer",
                                    ["Content-Length: 1000000000000000"], b"{}"))
    dt = time.monotonic() - t
    return refused_with(res, {413}) and dt < 3, f"{summary(res)} after {dt:.1f}s"


@case("http-framing", "chunk_size_overflow",
      "Transfer-Encoding: chunked with chunk size 1 followed by 16 zeros and 2 (2^64+2: wraps "
      "to 2 in 64 bits), 2 bytes, a last chunk and a hidden GET",
      "one 400, the hidden GET never answered")
def _(p):
    body = b"10000000000000002\r\n{}\r\n0\r\n\r\n" + SMUGGLED
    res = raw_http(p.http_port, req("POST", "/v2/repository/index",
                                    ["Transfer-Encoding: chunked"], body), grace=0.8)
    return refused_with(res, {400}), summary(res)


@case("http-framing", "chunk_size_malformed",
      "chunk sizes '-2', '0x2', ' 2', '2 ', '+2' and 'g' (each then 2 bytes and a last chunk) on "
      "chunked POST /v2/repository/index",
      "400 at once for each (RFC 9112 7.1: chunk-size = 1*HEXDIG; a lenient parse is a "
      "request-smuggling desync against a stricter proxy)")
def _(p):
    v = Variants()
    for size in (b"-2", b"0x2", b" 2", b"2 ", b"+2", b"g"):
        res = raw_http(p.http_port, req("POST", "/v2/repository/index",
                                        ["Transfer-Encoding: chunked"],
                                        size + b"\r\n{}\r\n0\r\n\r\n"), timeout=2.5)
        v.add(size.decode(), refused_with(res, {400}), summary(res))
    return v.result()


@case("http-framing", "chunk_extensions",
      "a valid chunked body whose chunk carries extensions ';a=b;q=\"x y\"' (RFC 9112 7.1.1); "
      "then one chunk with a 100 KB extension",
      "200 with the repository index for the first; 200 or 400 for the huge one, promptly")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("POST", "/v2/repository/index", ["Transfer-Encoding: chunked"],
                                    b'2;a=b;q="x y"\r\n{}\r\n0\r\n\r\n'))
    ok = statuses(res) == [200] and b"mlp" in res["responses"][0]["body"]
    v.add("extensions", ok, summary(res))
    res = raw_http(p.http_port, req("POST", "/v2/repository/index", ["Transfer-Encoding: chunked"],
                                    b"2;" + b"e" * 100000 + b"\r\n{}\r\n0\r\n\r\n"))
    v.add("100 KB extension", refused_with(res, {200, 400, 413, 431}, allow_drop=True),
          summary(res))
    return v.result()


@case("http-framing", "transfer_encoding_obfuscated",
      "Transfer-Encoding variants each with Content-Length: 2 and a hidden GET: 'chunked, "
      "identity', 'gzip', 'xchunked', '\\tchunked', 'Transfer-Encoding : chunked' (space before "
      "colon), 'CHUNKED'",
      "400 (or 501 for an unknown coding) each, one response, the hidden GET never answered")
def _(p):
    v = Variants()
    for header in ("Transfer-Encoding: chunked, identity", "Transfer-Encoding: gzip",
                   "Transfer-Encoding: xchunked", "Transfer-Encoding:\tchunked",
                   "Transfer-Encoding : chunked", "Transfer-Encoding: CHUNKED"):
        res = raw_http(p.http_port, req("POST", "/v2/repository/index",
                                        [header, "Content-Length: 2"], b"{}" + SMUGGLED),
                       grace=0.6)
        v.add(repr(header), refused_with(res, {400, 501}), summary(res))
    return v.result()


@case("http-framing", "line_ending_and_folding",
      "GET /v2/health/ready with bare LF line ends; a header continued by obs-fold; a header "
      "value holding NUL; a header name holding a space",
      "each answered 200 or 400 (RFC 9112 allows either for LF and fold), one response, no hang")
def _(p):
    v = Variants()
    for label, data in (
            ("bare LF", b"GET /v2/health/ready HTTP/1.1\nHost: a\n\n"),
            ("obs-fold", b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\nX-A: b\r\n  c\r\n\r\n"),
            ("NUL in value", b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n"),
            ("space in name", b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\nX A: b\r\n\r\n")):
        res = raw_http(p.http_port, data)
        v.add(label, refused_with(res, {200, 400}), summary(res))
    return v.result()


@case("http-framing", "header_line_1mb",
      "GET /v2/health/ready with one 1 MiB header line",
      "431 or 400 (or the connection dropped), server unharmed")
def _(p):
    res = raw_http(p.http_port, req("GET", "/v2/health/ready", ["X-Big: " + "a" * (1 << 20)]))
    return refused_with(res, {400, 413, 431}, allow_drop=True), summary(res)


@case("http-framing", "header_section_size",
      "GET /v2/health/ready with 20000 headers 'X-N: v' (180 KB); with 2000 headers of 8000 bytes "
      "(16 MiB of header section); then 12 connections each sending 5 MiB of headers and never "
      "ending them, held 1 s",
      "431 (or 400, or a drop) for both: a server bounds the header section (nginx 32 KiB, Triton's "
      "libevent 8 KiB+); the held connections cost the server under 24 MiB of RSS")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("GET", "/v2/health/ready",
                                    [f"X-{i}: v" for i in range(20000)]))
    v.add("20000 headers", refused_with(res, {400, 413, 431}, allow_drop=True), summary(res))
    res = raw_http(p.http_port, req("GET", "/v2/health/ready",
                                    [f"X-{i}: " + "v" * 8000 for i in range(2000)]))
    v.add("16 MiB section", refused_with(res, {400, 413, 431}, allow_drop=True), summary(res))
    before = p.rss_mib()
    block = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 8000) for i in range(650))
    socks = []
    try:
        for _ in range(12):
            s = socket.create_connection(("127.0.0.1", p.http_port), timeout=2)
            try:
                s.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\n" + block)
            except OSError:
                pass
            socks.append(s)
        time.sleep(1)
        after = p.rss_mib()
    finally:
        for s in socks:
            s.close()
    grown = (after - before) if before and after else 0
    v.add("held sections", grown < 24, f"RSS {before or 0:.0f} -> {after or 0:.0f} MiB with 12 x "
          f"{len(block) >> 20} MiB unfinished header sections")
    return v.result()


@case("http-framing", "url_1mb",
      "GET /v2/models/<1 MiB of 'a'>/ready",
      "414, 431 or 400 (or a drop)")
def _(p):
    res = raw_http(p.http_port, req("GET", "/v2/models/" + "a" * (1 << 20) + "/ready"))
    return refused_with(res, {400, 404, 414, 431}, allow_drop=True), summary(res)


@case("http-framing", "pipelined_gets",
      "two GET /v2/health/ready in one write on one keep-alive connection (HTTP/1.1 pipelining, "
      "RFC 9112 9.3.2); on the metrics port two GET /metrics in one write",
      "two 200s on each (a server may instead close after the first, saying Connection: close); "
      "never the second request silently dropped with the connection left open")
def _(p):
    v = Variants()
    for label, port, path in (("http", p.http_port, "/v2/health/ready"),
                              ("metrics", p.metrics_port, "/metrics")):
        t = time.monotonic()
        res = raw_http(port, req("GET", path) * 2, want=2, timeout=3)
        got = statuses(res)
        first_closes = got and "close" in ",".join(res["responses"][0]["headers"].get("connection", []))
        ok = got == [200, 200] or (got == [200] and first_closes and res["closed"])
        v.add(label, ok, f"{summary(res)} after {time.monotonic() - t:.1f}s")
    return v.result()


@case("http-framing", "pipelined_infers_in_order",
      "three JSON inferences of different inputs pipelined in one write on one connection",
      "three 200s in request order, each the reference answer for its own input")
def _(p):
    xs = [np.full((1, 512), v, np.float32) * np.linspace(-1, 1, 512, dtype=np.float32)
          for v in (0.25, -0.5, 1.0)]
    data = b""
    for x in xs:
        body = json.dumps(json_infer(x)).encode()
        data += req("POST", "/v2/models/mlp/infer",
                    [f"Content-Length: {len(body)}", "Content-Type: application/json"], body)
    res = raw_http(p.http_port, data, want=3, timeout=3)
    ok = statuses(res) == [200, 200, 200] and all(
        p.mlp_right(json_y(r["body"]), x) for r, x in zip(res["responses"], xs))
    return ok, summary(res) + (" answers right, in order" if ok else "")


@case("http-framing", "pipelined_broken_middle",
      "one write: GET /v2/health/ready, then 'NOT A REQUEST LINE', then GET /v2/models/mlp; "
      "then one write: GET ready, POST infer with a bad JSON body (right Content-Length), GET "
      "/v2/models/mlp",
      "framing error: 200, then 400 (or no answer) and close, the third never answered; bad "
      "body: 200, 400, then either the metadata (200) or a close")
def _(p):
    v = Variants()
    data = req("GET", "/v2/health/ready") + b"NOT A REQUEST LINE\r\n\r\n" + \
        req("GET", "/v2/models/mlp")
    res = raw_http(p.http_port, data, want=2, grace=0.8, timeout=3)
    v.add("framing", statuses(res) == [200, 400] or (statuses(res) == [200] and res["closed"]),
          summary(res))
    bad = b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 512], "data": [1,'
    data = req("GET", "/v2/health/ready") + \
        req("POST", "/v2/models/mlp/infer", [f"Content-Length: {len(bad)}"], bad) + \
        req("GET", "/v2/models/mlp")
    res = raw_http(p.http_port, data, want=3, grace=0.5, timeout=3)
    got = statuses(res)
    ok = got == [200, 400] or (got == [200, 400, 200] and b'"mlp"' in res["responses"][2]["body"])
    v.add("bad body", ok, summary(res))
    return v.result()


@case("http-framing", "request_targets",
      "absolute-form 'GET http://127.0.0.1:PORT/v2/health/ready', absolute-form with a foreign "
      "host, asterisk-form 'OPTIONS *', authority-form 'CONNECT 127.0.0.1:22', "
      "'GET v2/health/ready' (no slash)",
      "absolute forms: 200 (RFC 9112 3.2.2) or 400/404; OPTIONS *: any non-5xx; CONNECT: never "
      "a 2xx tunnel (4xx or 501); no leading slash: 400/404")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("GET", f"http://127.0.0.1:{p.http_port}/v2/health/ready"))
    v.add("absolute", refused_with(res, {200, 400, 404}), summary(res))
    res = raw_http(p.http_port, req("GET", "http://evil.example/v2/models/mlp"))
    v.add("absolute foreign", refused_with(res, {200, 400, 404, 421}), summary(res))
    res = raw_http(p.http_port, req("OPTIONS", "*"))
    v.add("OPTIONS *", len(statuses(res)) == 1 and statuses(res)[0] < 500, summary(res))
    res = raw_http(p.http_port, req("CONNECT", "127.0.0.1:22") + b"SSH-2.0-attack\r\n")
    v.add("CONNECT", len(statuses(res)) >= 1 and statuses(res)[0] in {400, 404, 405, 501},
          summary(res))
    res = raw_http(p.http_port, req("GET", "v2/health/ready"))
    v.add("no slash", refused_with(res, {400, 404}), summary(res))
    return v.result()


@case("http-framing", "odd_methods",
      "TRACE /v2/health/ready with 'X-Secret: hunter2'; 'get' lowercase; 'BREW'; DELETE "
      "/v2/models/mlp; PUT /v2/repository/models/mlp/load",
      "4xx or 501 each; TRACE never echoes the request (no 'hunter2' in the answer)")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("TRACE", "/v2/health/ready", ["X-Secret: hunter2"]))
    echo = any(b"hunter2" in r.get("body", b"") for r in res["responses"])
    v.add("TRACE", refused_with(res, {400, 404, 405, 501}) and not echo, summary(res))
    for method, path in (("get", "/v2/health/ready"), ("BREW", "/v2"),
                         ("DELETE", "/v2/models/mlp"), ("PUT", "/v2/repository/models/mlp/load")):
        res = raw_http(p.http_port, req(method, path, ["Content-Length: 0"]))
        v.add(f"{method} {path}", refused_with(res, {400, 404, 405, 501}), summary(res))
    return v.result()


@case("http-framing", "http_versions",
      "GET /v2/health/ready as HTTP/1.0 without Host; HTTP/1.1 without Host; HTTP/2.0, "
      "HTTP/1.9, HTTP/11 and 'HTTP/1.1 extra' in the request line; the HTTP/2 preface",
      "HTTP/1.0: 200 then close; no Host: 400 (RFC 9112 3.2) or 200; bogus versions: 505 "
      "or 400 (or a drop for the preface)")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("GET", "/v2/health/ready", version="HTTP/1.0", host=False),
                   grace=1.0)
    v.add("HTTP/1.0", statuses(res) == [200] and res["closed"], summary(res))
    res = raw_http(p.http_port, req("GET", "/v2/health/ready", host=False))
    v.add("1.1 no Host", refused_with(res, {200, 400}), summary(res))
    for version in ("HTTP/2.0", "HTTP/1.9", "HTTP/11", "HTTP/1.1 extra"):
        res = raw_http(p.http_port, req("GET", "/v2/health/ready", version=version))
        v.add(version, refused_with(res, {400, 505}, allow_drop=True), summary(res))
    res = raw_http(p.http_port, H2_PREFACE + h2_frame(SETTINGS, 0, 0))
    v.add("h2 preface", refused_with(res, {400, 505}, allow_drop=True), summary(res))
    return v.result()


@case("http-framing", "post_without_length",
      "POST /v2/repository/index with neither Content-Length nor Transfer-Encoding (what "
      "`curl -X POST` sends): RFC 9112 6.3 says the body is empty",
      "200 with the index (or 411 Length Required), not a 400 claiming a truncated body")
def _(p):
    t = time.monotonic()
    res = raw_http(p.http_port, req("POST", "/v2/repository/index"), timeout=2.5)
    return refused_with(res, {200, 411}), f"{summary(res)} after {time.monotonic() - t:.1f}s"


@case("http-framing", "expect_100_continue",
      "POST infer with 'Expect: 100-continue' and Content-Length 10^12 (no body); then a real "
      "infer with 'Expect: 100-continue' whose body follows after 0.3 s",
      "the huge one: 413 (or 417) without a 100 Continue; the real one: (100 then) 200 with "
      "the right answer")
def _(p):
    v = Variants()
    res = raw_http(p.http_port, req("POST", "/v2/models/mlp/infer",
                                    ["Expect: 100-continue", "Content-Length: 1000000000000"]))
    got = statuses(res)
    v.add("huge", got in ([413], [417]), summary(res))
    x = p.x_good[:1]
    body = json.dumps(json_infer(x)).encode()
    head = req("POST", "/v2/models/mlp/infer",
               ["Expect: 100-continue", f"Content-Length: {len(body)}"])
    res = raw_http(p.http_port, None, want=1, pieces=[head, body], piece_delay=0.3)
    finals = [r for r in res["responses"] if r["status"] != 100]
    ok = len(finals) == 1 and finals[0]["status"] == 200 and p.mlp_right(json_y(finals[0]["body"]), x)
    v.add("real", ok, summary(res))
    return v.result()


@case("http-framing", "slow_clients",
      "60 connections dripping a header byte every 0.5 s and 60 dripping a 100 KB body byte by "
      "byte for 2 s, while a fresh client infers; then silence",
      "the fresh inference answered right while they drip; every dripping connection closed by "
      "the server within 2 x read-timeout (5 s) + 1 s of silence")
def _(p):
    import select
    heads, _, f1 = open_many(p.http_port, 60, first=b"GET /v2/health/ready HTTP/1.1\r\nHost: a\r\nX-Slow: ")
    bodies, _, f2 = open_many(p.http_port, 60, first=b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: a\r\n"
                              b"Content-Length: 100000\r\n\r\n{")
    socks = [s for pair in zip(heads, bodies) for s in pair]
    try:
        served = []
        for step in range(4):
            for s in socks:
                try:
                    s.send(b"a")
                except OSError:
                    pass
            if step == 1:
                x = p.x_good[:1]
                t = time.monotonic()
                try:
                    status, _, data = p.http_infer("mlp", json.dumps(json_infer(x)))
                    served.append(status == 200 and p.mlp_right(json_y(data), x))
                except OSError:
                    served.append(False)
                served.append(time.monotonic() - t < 3)
            time.sleep(0.5)
        silent_from = time.monotonic()
        closed_at = {}
        while len(closed_at) < len(socks) and time.monotonic() - silent_from < 11.0:
            live = [s for i, s in enumerate(socks) if i not in closed_at]
            readable, _, _ = select.select(live, [], [], 0.2)
            for s in readable:
                try:
                    chunk = s.recv(65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    closed_at[socks.index(s)] = time.monotonic() - silent_from
        heads = [t for i, t in closed_at.items() if i % 2 == 0]
        bodies = [t for i, t in closed_at.items() if i % 2 == 1]
        ok = all(served) and len(closed_at) == len(socks) and not f1 + f2
        return ok, (f"{len(socks)} connected ({len(f1 + f2)} failed); fresh inference during the drip {'right' if all(served) else 'FAILED'}; "
                    f"header drippers closed {len(heads)}/60 (last {max(heads, default=0):.1f}s), body "
                    f"drippers closed {len(bodies)}/60 (last {max(bodies, default=0):.1f}s) after the "
                    f"last byte")
    finally:
        for s in socks:
            s.close()


@case("http-framing", "connection_burst",
      "200 connections opened at once from 8 threads, each sending GET /v2/health/ready and held "
      "open after its answer; then a fresh infer",
      "every connect completes in under 1 s (a listen backlog that overflows drops SYNs: the "
      "client retries after 1 s, 3 s, ...); all 200 answered; the fresh infer right within 1 s")
def _(p):
    socks, lat, failures = open_many(p.http_port, 200, first=req("GET", "/v2/health/ready"))
    try:
        answered = 0
        for s in socks:
            try:
                if s.recv(4096).startswith(b"HTTP/1.1 200"):
                    answered += 1
            except OSError:
                pass
        x = p.x_good[:2]
        t = time.monotonic()
        status, _, data = p.http_infer("mlp", json.dumps(json_infer(x)))
        dt = time.monotonic() - t
        fresh = status == 200 and p.mlp_right(json_y(data), x) and dt < 1
        slow = sum(1 for v in lat if v >= 1)
        ok = answered == 200 and fresh and slow == 0 and not failures
        return ok, (f"{len(socks)} connected ({len(failures)} failed), {slow} connects took >= 1 s "
                    f"(max {max(lat, default=0):.2f}s); {answered}/200 answered; fresh infer "
                    f"{'right' if fresh else 'WRONG/slow'} in {dt:.2f}s")
    finally:
        for s in socks:
            s.close()


def _bomb(levels, size=256 << 20, encoding="gzip"):
    data = b""
    co = zlib.compressobj(1, zlib.DEFLATED, 31 if encoding == "gzip" else 15)
    block = b"\0" * (4 << 20)
    parts = [co.compress(block) for _ in range(size // len(block))]
    data = b"".join(parts) + co.flush()
    for _ in range(levels - 1):
        data = gzip.compress(data, 9)
    return data


@case("http-framing", "compressed_body_bombs",
      "POST infer with Content-Encoding gzip inflating to 256 MiB (250 KB sent); deflate the same; "
      "'gzip, gzip' (nested, 2 KB sent); a truncated gzip stream; Content-Encoding: br",
      "413 (or 400/415) each within 5 s, the server's RSS not grown by over 512 MiB")
def _(p):
    v = Variants()
    before = p.rss_mib()
    one = _bomb(1)
    for label, body, enc in (("gzip", one, "gzip"), ("deflate", _bomb(1, encoding="deflate"), "deflate"),
                             ("gzip,gzip", gzip.compress(one, 9), "gzip, gzip"),
                             ("truncated", gzip.compress(json.dumps(json_infer(p.x_good)).encode())[:200], "gzip"),
                             ("br", b"\x0b\x02\x80{}\x03", "br")):
        t = time.monotonic()
        try:
            status, _, data = p.http_infer("mlp", body, {"Content-Encoding": enc})
            obs = f"{status} {data[:90]!r}"
        except OSError as e:
            status, obs = None, f"{type(e).__name__}"
        dt = time.monotonic() - t
        v.add(label, status in (400, 413, 415) and dt < 5, f"{obs} in {dt:.1f}s")
    after = p.rss_mib()
    grown = (after - before) if before and after else 0
    v.add("rss", grown < 512, f"RSS {before or 0:.0f} -> {after or 0:.0f} MiB")
    return v.result()


# ---- KServe v2 JSON / binary bodies -------------------------------------------


def _expect_400s(p, bodies, model="mlp", codes=(400,)):
    v = Variants()
    for label, body, headers in bodies:
        try:
            status, _, data = p.http_infer(model, body, headers)
            v.add(label, status in codes, f"{status} {data[:110]!r}")
        except OSError as e:
            v.add(label, False, f"{type(e).__name__}: {e}")
    return v.result()


def _x1():
    return np.linspace(-1, 1, 512, dtype=np.float32).reshape(1, 512)


@case("http-json", "json_number_abuse",
      "mlp infer JSON with data holding 1e999, -1e999, 1e-999, -0, 18446744073709551616, and a "
      "500-digit integer",
      "400 for out-of-range values (1e999, the huge integers), or 200 whose answer equals the "
      "reference on the values as float32 (inf, 0, -0, 1.8e19)")
def _(p):
    v = Variants()
    for token, value in (("1e999", np.inf), ("-1e999", -np.inf), ("1e-999", 0.0), ("-0", -0.0),
                         ("18446744073709551616", 1.8446744e19), ("9" * 500, np.inf)):
        x = _x1()
        text = json.dumps(json_infer(x)).replace("[-1.0,", f"[{token},", 1)
        status, _, data = p.http_infer("mlp", text)
        if status == 200:
            x2 = x.copy()
            x2[0, 0] = value
            want = p.mlp_ref(x2)
            got = json_y(data)
            ok = got is not None and got.shape == want.shape and (
                np.allclose(got, want, rtol=1e-3, equal_nan=True))
            v.add(token[:12], ok, f"200 y={None if got is None else got.ravel()[:1]} want {want.ravel()[:1]}")
        else:
            v.add(token[:12], status == 400, f"{status} {data[:90]!r}")
    return v.result()


@case("http-json", "json_shape_abuse",
      "mlp infer JSON shapes: [2^62,512], [2^64+1,512], [2^55+1,512] (x 2048 bytes wraps to one "
      "row), [-1,512], [-0,512], [1.0,512], [1,512.5], ['1',512], [1e0,512], rank 64, [0,512], "
      "[257,512], [] and a shape of 100000 ones; 512 values of data each",
      "400 each (a float 1.0 may be read as 1: then 200 with the right answer)")
def _(p):
    v = Variants()
    x = _x1()
    for label, shape_text in (("2^62", f"[{1 << 62}, 512]"), ("2^64+1", f"[{(1 << 64) + 1}, 512]"),
                              ("2^55+1", f"[{(1 << 55) + 1}, 512]"), ("-1", "[-1, 512]"),
                              ("-0", "[-0, 512]"), ("1.0", "[1.0, 512]"), ("512.5", "[1, 512.5]"),
                              ("'1'", '["1", 512]'), ("1e0", "[1e0, 512]"),
                              ("rank64", json.dumps([1] * 63 + [512])), ("0", "[0, 512]"),
                              ("257", "[257, 512]"), ("[]", "[]"),
                              ("1e5 ones", json.dumps([1] * 100000 + [512]))):
        text = json.dumps(json_infer(x, shape=["SHAPE"])).replace('["SHAPE"]', shape_text)
        status, _, data = p.http_infer("mlp", text)
        ok = status == 400 or (label in ("1.0", "1e0") and status == 200 and
                               p.mlp_right(json_y(data), x))
        v.add(label, ok, f"{status} {data[:90]!r}")
    return v.result()


@case("http-json", "json_data_abuse",
      "mlp infer [1,512] with 511 values; 513 values; [2,512] nested ragged (512 and 511); "
      "null/true/'1'/{} among the values; NaN and Infinity tokens; data as an object; data "
      "nested 3 deep for a rank-2 shape",
      "400 each (the 3-deep data has the right count: Triton flattens it, so 200 with the right "
      "answer is accepted there)")
def _(p):
    x = _x1()
    vals = x.ravel().tolist()
    base = {"name": "x", "datatype": "FP32", "shape": [1, 512]}

    def body(data, shape=(1, 512)):
        return json.dumps({"inputs": [dict(base, shape=list(shape), data=data)]})
    bodies = [("511 values", body(vals[:511]), None), ("513 values", body(vals + [0.0]), None),
              ("ragged", body([vals, vals[:511]], (2, 512)), None),
              ("null", body([None] + vals[1:]), None), ("true", body([True] + vals[1:]), None),
              ("'1'", body(["1"] + vals[1:]), None), ("{}", body([{}] + vals[1:]), None),
              ("NaN token", body(vals).replace("[-1.0,", "[NaN,", 1), None),
              ("Infinity token", body(vals).replace("[-1.0,", "[Infinity,", 1), None),
              ("object", body({"0": 1.0}), None)]
    v = Variants()
    ok, text = _expect_400s(p, bodies)
    v.add("malformed", ok, text)
    status, _, data = p.http_infer("mlp", body([[vals]]))
    v.add("3 deep", status == 400 or (status == 200 and p.mlp_right(json_y(data), x)),
          f"{status} {data[:60]!r}")
    return v.result()


@case("http-json", "json_structure_abuse",
      "infer bodies: a JSON array; a string; trailing garbage after the object; inputs as an "
      "object; 100000 inputs x_i; nesting 100000 deep; 'inputs' missing; an unterminated string; "
      "a UTF-16 BOM; a 1 MiB key",
      "400 each, promptly")
def _(p):
    good = json.dumps(json_infer(_x1()))
    bodies = [("array", "[1,2]", None), ("string", '"x"', None), ("trailing", good + "garbage", None),
              ("inputs object", '{"inputs": {"name": "x"}}', None),
              ("1e5 inputs", json.dumps({"inputs": [{"name": f"x{i}", "datatype": "FP32",
                                                     "shape": [1, 1], "data": [0]}
                                                    for i in range(100000)]}), None),
              ("deep", "[" * 100000 + "]" * 100000, None), ("no inputs", "{}", None),
              ("unterminated", '{"inputs": [{"name": "x', None),
              ("utf16 bom", b"\xff\xfe" + good.encode("utf-16-le"), None),
              ("1 MiB key", '{"' + "k" * (1 << 20) + '": 1, "inputs": []}', None)]
    return _expect_400s(p, bodies)


@case("http-json", "json_string_tricks",
      "input named 'x\\u0000'; 'x\\u0000evil'; datatype 'FP32\\u0000', 'fp32', 'FP32 ', "
      "'FP64'; input name holding invalid UTF-8 (raw 0xff); a lone surrogate '\\ud800'",
      "400 each (a NUL must not truncate a name into a match)")
def _(p):
    x = _x1()
    bodies = []
    for label, name, dtype in (("name x\\0", "x\u0000", "FP32"), ("name x\\0evil", "x\u0000evil", "FP32"),
                               ("FP32\\0", "x", "FP32\u0000"), ("fp32", "x", "fp32"),
                               ("'FP32 '", "x", "FP32 "), ("FP64", "x", "FP64"),
                               ("surrogate", "x\ud800", "FP32")):
        bodies.append((label, json.dumps(json_infer(x, name=name, datatype=dtype)), None))
    raw = json.dumps(json_infer(x, name="XNAME")).encode().replace(b"XNAME", b"x\xff")
    bodies.append(("invalid utf8", raw, None))
    return _expect_400s(p, bodies)


@case("http-json", "binary_header_length_abuse",
      "binary infer (2048 tensor bytes) with Inference-Header-Content-Length: body+100, -5, 0, "
      "'12abc', 2^64+16, a duplicate pair (right and wrong), and one just short of the JSON",
      "400 each")
def _(p):
    x = _x1()
    bodies = []
    body, headers = binary_infer(x)
    jl = int(headers["Inference-Header-Content-Length"])
    for label, value in (("> body", str(len(body) + 100)), ("-5", "-5"), ("0", "0"),
                         ("12abc", "12abc"), ("2^64+16", str((1 << 64) + 16)),
                         ("short by 1", str(jl - 1))):
        bodies.append((label, body, dict(headers, **{"Inference-Header-Content-Length": value})))
    v = Variants()
    ok, text = _expect_400s(p, bodies)
    v.add("values", ok, text)
    data = req("POST", "/v2/models/mlp/infer",
               [f"Content-Length: {len(body)}", f"Inference-Header-Content-Length: {jl}",
                f"Inference-Header-Content-Length: {jl + 7}"], body)
    res = raw_http(p.http_port, data)
    v.add("duplicate header", refused_with(res, {400}), summary(res))
    return v.result()


@case("http-json", "binary_data_size_abuse",
      "binary infer with binary_data_size 4096 for 2048 sent; 1024; -1; 2^64-1; 2^63; "
      "'2048' (string); 2048 with 2048 extra trailing bytes; shape [2^55+1,512] with 2048 bytes "
      "(byte count wraps to one row); binary_data_size plus a 'data' array of zeros",
      "400 each; binary plus data: 400, or 200 computed from one of them (recorded)")
def _(p):
    x = _x1()
    bodies = []
    for label, size in (("4096", 4096), ("1024", 1024), ("-1", -1), ("2^64-1", U64),
                        ("2^63", 1 << 63), ("'2048'", "2048")):
        body, headers = binary_infer(x, size=size)
        bodies.append((label, body, headers))
    body, headers = binary_infer(x, tail=b"\0" * 2048)
    bodies.append(("trailing", body, headers))
    body, headers = binary_infer(x, params=None)
    head = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 512],
                                   "data": [0.0] * 512,
                                   "parameters": {"binary_data_size": 2048}}]}).encode()
    status, _, data = p.http_infer("mlp", head + x.tobytes(),
                                   {"Inference-Header-Content-Length": str(len(head))})
    used = "binary" if p.mlp_right(json_y(data), x) else \
        "data" if p.mlp_right(json_y(data), np.zeros_like(x)) else "neither"
    data_too = (status == 400 or (status == 200 and used != "neither"), f"{status}, used {used}")
    head = json.dumps({"inputs": [{"name": "x", "datatype": "FP32", "shape": [(1 << 55) + 1, 512],
                                   "parameters": {"binary_data_size": 2048}}]}).encode()
    bodies.append(("wrap", head + x.tobytes(), {"Inference-Header-Content-Length": str(len(head))}))
    v = Variants()
    ok, text = _expect_400s(p, bodies)
    v.add("sizes", ok, text)
    v.add("binary and data (zeros) both", *data_too)
    return v.result()


@case("http-json", "requested_outputs_abuse",
      "mlp infer asking for output 'nope'; 'y' twice; '' ; 'y\\u0000'; 1000 outputs; outputs "
      "as a string; binary_data_output: 'yes'",
      "400 each (binary_data_output 'yes': 400, or ignored with the right answer)")
def _(p):
    x = _x1()
    bodies = []
    for label, outs in (("unknown", [{"name": "nope"}]), ("twice", [{"name": "y"}, {"name": "y"}]),
                        ("empty", [{"name": ""}]), ("y\\0", [{"name": "y\u0000"}]),
                        ("1000", [{"name": f"o{i}"} for i in range(1000)]), ("string", "y")):
        bodies.append((label, json.dumps(json_infer(x, outputs=outs)), None))
    v = Variants()
    ok, text = _expect_400s(p, bodies)
    v.add("outputs", ok, text)
    status, _, data = p.http_infer("mlp", json.dumps(json_infer(x, parameters={"binary_data_output": "yes"})))
    v.add("binary_data_output 'yes'", status == 400 or (status == 200 and p.mlp_right(json_y(data), x)),
          f"{status} {data[:60]!r}")
    return v.result()


@case("http-json", "classification_abuse",
      "output y with classification 2^62, 2^64-1 (both above the 1 element per row); then -1, 0, "
      "'3', 2.5, true, {}, and classification on an output also put in shared memory",
      "huge counts: 200 with one class per row, '<value>:0' matching the reference; 0: 400 or "
      "plain values (Triton's HTTP reads 0 as no classification); the others 400")
def _(p):
    v = Variants()
    x = p.x_good
    want = p.mlp_ref(x)
    for k in (1 << 62, U64):
        status, _, data = p.http_infer("mlp", json.dumps(json_infer(
            x, outputs=[{"name": "y", "parameters": {"classification": k}}])))
        ok = False
        try:
            out = json.loads(data)["outputs"][0]
            vals = [float(s.split(":")[0]) for s in out["data"]]
            idx = [s.split(":")[1] for s in out["data"]]
            ok = status == 200 and out["shape"] == [3, 1] and idx == ["0"] * 3 and \
                np.allclose(vals, want.ravel(), atol=2e-6 + TOLERANCE)
        except (ValueError, KeyError, IndexError, TypeError):
            pass
        v.add(f"k={k}", ok, f"{status} {data[:120]!r}")
    bodies = []
    status, _, data = p.http_infer("mlp", json.dumps(json_infer(
        x, outputs=[{"name": "y", "parameters": {"classification": 0}}])))
    v.add("k=0", status == 400 or (status == 200 and p.mlp_right(json_y(data), x)),
          f"{status} {data[:70]!r}")
    for label, k in (("-1", -1), ("'3'", "3"), ("2.5", 2.5), ("true", True), ("{}", {})):
        bodies.append((label, json.dumps(json_infer(
            x, outputs=[{"name": "y", "parameters": {"classification": k}}])), None))
    bodies.append(("with shm", json.dumps(json_infer(x, outputs=[{"name": "y", "parameters": {
        "classification": 1, "shared_memory_region": "nope", "shared_memory_byte_size": 12}}])), None))
    ok, text = _expect_400s(p, bodies)
    v.add("bad counts", ok, text)
    return v.result()


@case("http-json", "parameters_abuse",
      "request parameters {'a': {'b': [[[1]]]}, 'c': null, 'd': 1e308}; input parameters holding "
      "an array; 10000 request parameters; a 1 MiB id; id as a number",
      "ignored (200, right answer) or 400 each; an echoed id intact")
def _(p):
    v = Variants()
    x = _x1()
    for label, body in (
            ("nested", json_infer(x, parameters={"a": {"b": [[[1]]]}, "c": None, "d": 1e308})),
            ("input param array", {"inputs": [dict(json_infer(x)["inputs"][0], parameters={"z": [1, 2]})]}),
            ("10000 params", json_infer(x, parameters={f"p{i}": i for i in range(10000)})),
            ("1 MiB id", json_infer(x, id="i" * (1 << 20))), ("numeric id", json_infer(x, id=7))):
        status, _, data = p.http_infer("mlp", json.dumps(body))
        ok = status == 400 or (status == 200 and p.mlp_right(json_y(data), x))
        if status == 200 and label == "1 MiB id":
            ok = ok and json.loads(data).get("id") == "i" * (1 << 20)
        v.add(label, ok, f"{status} {data[:80]!r}")
    return v.result()


@case("http-json", "accept_encoding_abuse",
      "infer with Accept-Encoding 'gzip;q=nan, deflate;q=1e999, identity;q=-1, br, *;q=0'; and "
      "'gzip;q=0, deflate;q=0, identity;q=0'",
      "200 each, the body (decoded per its Content-Encoding) the right answer")
def _(p):
    v = Variants()
    x = p.x_good
    for ae in ("gzip;q=nan, deflate;q=1e999, identity;q=-1, br, *;q=0",
               "gzip;q=0, deflate;q=0, identity;q=0", ";;;,,,q=,gzip;;q"):
        status, headers, data = p.http_infer("mlp", json.dumps(json_infer(x)), {"Accept-Encoding": ae})
        enc = headers.get("content-encoding", "")
        try:
            if enc == "gzip":
                data = gzip.decompress(data)
            elif enc == "deflate":
                data = zlib.decompress(data)
        except zlib.error:
            data = b""
        v.add(repr(ae), status == 200 and p.mlp_right(json_y(data), x), f"{status} enc={enc!r}")
    return v.result()


@case("http-api", "model_path_tricks",
      "GET metadata and POST infer with model names: '..%2fmlp', '%2e%2e/mlp', 'mlp%00', "
      "'mlp%00evil', 'ml%ffp', 'mlp/../dlrm_dense', './mlp', '%2fetc%2fpasswd', "
      "'mlp%2f..%2f..%2f..%2fetc%2fpasswd', '%2e%2e%2f%2e%2e%2fetc'; a raw 0xff byte; versions "
      "'99999999999999999999999', '-1', '0x1', '1%00', '01', '%31'",
      "404 or 400 each, never a file's content, never 5xx ('./mlp' and 'mlp/../dlrm_dense' may be "
      "normalized to a real model; versions '01' and '%31' may read as 1)")
def _(p):
    v = Variants()
    x = _x1()
    body = json.dumps(json_infer(x)).encode()
    names = ["..%2fmlp", "%2e%2e/mlp", "mlp%00", "mlp%00evil", "ml%ffp", "mlp/../dlrm_dense",
             "./mlp", "%2fetc%2fpasswd", "mlp%2f..%2f..%2f..%2fetc%2fpasswd", "%2e%2e%2f%2e%2e%2fetc"]
    for name in names:
        for method, suffix, data in (("GET", "", None), ("POST", "/infer", body)):
            status, _, text = p.http(method, f"/v2/models/{name}{suffix}", data)
            ok = b"root:" not in text and (status in (400, 404) or (
                name in ("mlp/../dlrm_dense", "./mlp") and status == 200 and
                (method == "GET" or (name == "./mlp" and p.mlp_right(json_y(text), x)))))
            v.add(f"{method} {name}", ok, f"{status} {text[:70]!r}")
    res = raw_http(p.http_port, req("GET", "/v2/models/ml\xffp"))
    v.add("raw 0xff", refused_with(res, {400, 404}), summary(res))
    for version in ("99999999999999999999999", "-1", "0x1", "1%00", "01", "%31"):
        status, _, data = p.http("POST", f"/v2/models/mlp/versions/{version}/infer", body)
        v.add(f"version {version}", status in (400, 404) or (version in ("01", "%31") and status == 200),
              f"{status} {data[:60]!r}")
    return v.result()


@case("http-api", "encoded_slash_routing",
      "percent-encoded slashes that a proxy matching raw paths would not see as separators: GET "
      "/v2/models/mlp%2Fready, /v2%2Fmodels%2Fmlp, /v2/health%2Fready, /v2/models/mlp%2Fstats; POST "
      "/v2/models/mlp%2Finfer; POST /v2%2Frepository%2Fmodels%2Fdlrm_dense%2Funload (then dlrm_dense "
      "reloaded)",
      "404 (or 400) each: %2F is data inside a segment (RFC 3986 2.2), so 'mlp/ready' is an unknown "
      "model and '/v2%2Frepository...' no route; in particular the encoded unload must not unload")
def _(p):
    v = Variants()
    body = json.dumps(json_infer(_x1())).encode()
    for method, path, data in (("GET", "/v2/models/mlp%2Fready", None), ("GET", "/v2%2Fmodels%2Fmlp", None),
                               ("GET", "/v2/health%2Fready", None), ("GET", "/v2/models/mlp%2Fstats", None),
                               ("POST", "/v2/models/mlp%2Finfer", body),
                               ("POST", "/v2%2Frepository%2Fmodels%2Fdlrm_dense%2Funload", b"")):
        status, _, text = p.http(method, path, data, timeout=20)
        v.add(f"{method} {path}", status in (400, 404), f"{status} {text[:60]!r}")
    still = p.model_ready("dlrm_dense")
    v.add("dlrm_dense still loaded", still, "")
    if not still:
        p.load("dlrm_dense")
    return v.result()


# ---- gRPC ----------------------------------------------------------------------


def _good_req(x=None):
    return infer_request("mlp", {"x": _x1() if x is None else x})


def _grpc_expect(p, label, request, codes, v, **kw):
    code, details, resp = p.grpc_infer(request, **kw)
    v.add(label, code in codes, f"{code.name} {details[:100]!r}")
    return code, resp


INVALID = (grpc.StatusCode.INVALID_ARGUMENT,)


@case("grpc", "raw_contents_abuse",
      "ModelInfer mlp [1,512]: 2 raw_input_contents for 1 input; none and no typed contents; "
      "raw and fp32_contents both; 2047 raw bytes; 2049 raw bytes; raw for an input that is not "
      "the model's",
      "INVALID_ARGUMENT each")
def _(p):
    v = Variants()
    x = _x1()
    r = _good_req(x)
    r.raw_input_contents.append(x.tobytes())
    _grpc_expect(p, "2 raw", r, INVALID, v)
    r = _good_req(x)
    del r.raw_input_contents[:]
    _grpc_expect(p, "no data", r, INVALID, v)
    r = _good_req(x)
    r.inputs[0].contents.fp32_contents.extend(x.ravel().tolist())
    _grpc_expect(p, "raw and typed", r, INVALID, v)
    for label, data in (("2047 bytes", x.tobytes()[:-1]), ("2049 bytes", x.tobytes() + b"\0")):
        r = _good_req(x)
        r.raw_input_contents[0] = data
        _grpc_expect(p, label, r, INVALID, v)
    r = _good_req(x)
    r.inputs[0].name = "not_x"
    _grpc_expect(p, "foreign input", r, INVALID, v)
    return v.result()


@case("grpc", "shape_abuse",
      "ModelInfer mlp with 2048 raw bytes and shapes [2^55+1,512] and [2^62+1,512] (byte counts "
      "wrap to 2048 in 64 bits), [2^63-1,512], [-1,512], [1,-512], rank 64, [0,512] with no "
      "bytes, [1,512,0], [257,512] (over max_batch_size)",
      "INVALID_ARGUMENT each, never an answer computed from the 2048 bytes")
def _(p):
    v = Variants()
    x = _x1()
    for label, shape, data in ((("2^55+1"), [(1 << 55) + 1, 512], x.tobytes()),
                               ("2^62+1", [(1 << 62) + 1, 512], x.tobytes()),
                               ("2^63-1", [(1 << 63) - 1, 512], x.tobytes()),
                               ("-1", [-1, 512], x.tobytes()), ("1,-512", [1, -512], x.tobytes()),
                               ("rank64", [1] * 63 + [512], x.tobytes()),
                               ("0 rows", [0, 512], b""), ("trailing 0", [1, 512, 0], b""),
                               ("257 rows", [257, 512], np.zeros((257, 512), np.float32).tobytes())):
        r = _good_req(x)
        del r.inputs[0].shape[:]
        r.inputs[0].shape.extend(shape)
        r.raw_input_contents[0] = data
        _grpc_expect(p, label, r, INVALID, v)
    return v.result()


@case("grpc", "name_and_type_tricks",
      "ModelInfer mlp with datatype 'FP32\\x00', 'fp32', 'FP32 ', 'FP16', ''; input name 'x\\x00'; "
      "input x given twice; model names '../mlp', 'mlp\\x00', '', 'mlp/../mlp', 4 KiB of 'm'; "
      "versions '-1', '18446744073709551616', '1\\x00', '0', '1 ', '+1', ' 1'",
      "INVALID_ARGUMENT for the tensor errors; NOT_FOUND (or INVALID_ARGUMENT / UNAVAILABLE) "
      "for the names and versions (' 1', '1 ', '+1': Triton's std::stoll reads them as 1, so OK "
      "with the right answer is accepted too)")
def _(p):
    v = Variants()
    x = _x1()
    for dt in ("FP32\x00", "fp32", "FP32 ", "FP16", ""):
        r = _good_req(x)
        r.inputs[0].datatype = dt
        _grpc_expect(p, f"datatype {dt!r}", r, INVALID, v)
    r = _good_req(x)
    r.inputs[0].name = "x\x00"
    _grpc_expect(p, "name x\\0", r, INVALID, v)
    r = _good_req(x)
    r.inputs.add().CopyFrom(r.inputs[0])
    r.raw_input_contents.append(x.tobytes())
    _grpc_expect(p, "x twice", r, INVALID, v)
    missing = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAVAILABLE)
    for name in ("../mlp", "mlp\x00", "", "mlp/../mlp", "m" * 4096):
        r = _good_req(x)
        r.model_name = name
        _grpc_expect(p, f"model {name[:12]!r}", r, missing, v)
    for version in ("-1", "18446744073709551616", "1\x00", "0"):
        r = _good_req(x)
        r.model_version = version
        _grpc_expect(p, f"version {version!r}", r, missing, v)
    for version in (" 1", "1 ", "+1"):
        r = _good_req(x)
        r.model_version = version
        code, details, resp = p.grpc_infer(r)
        v.add(f"version {version!r}", code in missing or (
            code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), x)), code.name)
    for rpc, msg in (("ModelMetadata", pb.ModelMetadataRequest(name="../../mlp")),
                     ("ModelConfig", pb.ModelConfigRequest(name="mlp\x00")),
                     ("ModelStatistics", pb.ModelStatisticsRequest(name="mlp\x00x")),
                     ("ModelReady", pb.ModelReadyRequest(name="/etc/passwd"))):
        code, details, resp = p.grpc_call(rpc, msg)
        ok = code in missing or (rpc == "ModelReady" and code == grpc.StatusCode.OK and not resp.ready)
        v.add(rpc, ok, f"{code.name} {details[:80]!r}")
    return v.result()


@case("grpc", "requested_outputs_and_classification",
      "ModelInfer mlp asking for output 'nope'; 'y' twice; classification as string_param '3', "
      "double_param 2.5, bool_param, int64 -5, int64 0; and int64 2^62 (above the classes)",
      "INVALID_ARGUMENT for the first six; OK with BYTES [3,1] '<value>:0' for 2^62")
def _(p):
    v = Variants()
    x = p.x_good
    r = infer_request("mlp", {"x": x}, outputs=["nope"])
    _grpc_expect(p, "unknown", r, INVALID, v)
    r = infer_request("mlp", {"x": x}, outputs=["y", "y"])
    _grpc_expect(p, "twice", r, INVALID, v)
    for label, setter in (("string", lambda prm: setattr(prm, "string_param", "3")),
                          ("double", lambda prm: setattr(prm, "double_param", 2.5)),
                          ("bool", lambda prm: setattr(prm, "bool_param", True)),
                          ("-5", lambda prm: setattr(prm, "int64_param", -5)),
                          ("0", lambda prm: setattr(prm, "int64_param", 0))):
        r = infer_request("mlp", {"x": x}, outputs=["y"])
        setter(r.outputs[0].parameters["classification"])
        _grpc_expect(p, f"classification {label}", r, INVALID, v)
    r = infer_request("mlp", {"x": x}, outputs=["y"])
    r.outputs[0].parameters["classification"].int64_param = 1 << 62
    code, details, resp = p.grpc_infer(r)
    ok = False
    if code == grpc.StatusCode.OK:
        raw = resp.raw_output_contents[0]
        texts, pos = [], 0
        while pos + 4 <= len(raw):
            n = struct.unpack("<I", raw[pos:pos + 4])[0]
            texts.append(raw[pos + 4:pos + 4 + n].decode())
            pos += 4 + n
        want = p.mlp_ref(x).ravel()
        ok = list(resp.outputs[0].shape) == [3, 1] and len(texts) == 3 and all(
            t.endswith(":0") and abs(float(t.split(":")[0]) - w) < 2e-6 + TOLERANCE
            for t, w in zip(texts, want))
        details = f"classes {texts}"
    v.add("2^62", ok, f"{code.name} {details[:100]}")
    return v.result()


@case("grpc", "parameters_and_metadata_flood",
      "ModelInfer mlp with 100000 request parameters; an 8 KiB id; 1000 metadata entries; one "
      "64 KiB metadata value; a 1 MiB metadata value",
      "OK with the right answer, or a clean refusal (RESOURCE_EXHAUSTED / INVALID_ARGUMENT / "
      "INTERNAL / UNAVAILABLE) within 10 s")
def _(p):
    v = Variants()
    x = p.x_good
    clean = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT,
             grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE)

    def run(label, r, metadata=None):
        t = time.monotonic()
        code, details, resp = p.grpc_infer(r, metadata=metadata)
        dt = time.monotonic() - t
        ok = (code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), x)) or code in clean
        v.add(label, ok and dt < 10, f"{code.name} {details[:60]!r} {dt:.1f}s")
    r = infer_request("mlp", {"x": x})
    for i in range(100000):
        r.parameters[f"p{i}"].int64_param = i
    run("1e5 params", r)
    r = infer_request("mlp", {"x": x})
    r.id = "i" * 8192
    run("8 KiB id", r)
    run("1000 metadata", infer_request("mlp", {"x": x}), [(f"k{i}", "v") for i in range(1000)])
    run("64 KiB metadata", infer_request("mlp", {"x": x}), [("big", "v" * 65536)])
    run("1 MiB metadata", infer_request("mlp", {"x": x}), [("big", "v" * (1 << 20))])
    return v.result()


@case("grpc", "compressed_request_bomb",
      "ModelInfer mlp, gzip-compressed by the client, whose id is 60 MiB of 'a' (60 KB on the "
      "wire; --grpc-accept-compressed-requests is off)",
      "UNIMPLEMENTED (compressed requests refused) or a size refusal (RESOURCE_EXHAUSTED); RSS "
      "not grown by over 512 MiB")
def _(p):
    r = infer_request("mlp", {"x": _x1()})
    r.id = "a" * (60 << 20)
    before = p.rss_mib()
    code, details, _ = p.grpc_infer(r, compression=grpc.Compression.Gzip, timeout=15)
    after = p.rss_mib()
    grown = (after - before) if before and after else 0
    ok = code in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.RESOURCE_EXHAUSTED) and grown < 512
    return ok, f"{code.name} {details[:90]!r}; RSS {before or 0:.0f} -> {after or 0:.0f} MiB"


@case("grpc", "undecodable_messages",
      "raw bytes on ModelInfer: 4 KiB of random bytes; a truncated ModelInferRequest; a field "
      "with a length of 2^31; then an unknown method /inference.GRPCInferenceService/Nope and "
      "/x.Y/Z",
      "INTERNAL or INVALID_ARGUMENT for the undecodable ones (gRPC's parse failure); "
      "UNIMPLEMENTED for unknown methods")
def _(p):
    v = Variants()
    good = _good_req().SerializeToString()
    ident = lambda b: b  # noqa: E731
    rnd = random.Random(7)
    for label, data in (("random", bytes(rnd.getrandbits(8) for _ in range(4096))),
                        ("truncated", good[:len(good) // 2]),
                        ("huge length", b"\x0a\x80\x80\x80\x80\x08mlp")):
        call = p.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                     request_serializer=ident, response_deserializer=ident)
        try:
            call(data, timeout=10)
            code = grpc.StatusCode.OK
        except grpc.RpcError as e:
            code = e.code()
        v.add(label, code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT), code.name)
    for path in ("/inference.GRPCInferenceService/Nope", "/x.Y/Z"):
        call = p.channel.unary_unary(path, request_serializer=ident, response_deserializer=ident)
        try:
            call(b"", timeout=10)
            code = grpc.StatusCode.OK
        except grpc.RpcError as e:
            code = e.code()
        v.add(path, code == grpc.StatusCode.UNIMPLEMENTED, code.name)
    return v.result()


@case("grpc", "stream_mixed_good_and_bad",
      "one ModelStreamInfer with 30 requests: good mlp ones (distinct inputs, ids g0..) mixed "
      "with a wrong shape, an unknown model, 'FP32\\x00', 2^55+1 rows and an empty request",
      "every good request answered right under its id; every bad one an error_message; the "
      "stream ends OK")
def _(p):
    rng = np.random.default_rng(5)
    reqs, goods = [], {}
    for i in range(30):
        x = rng.uniform(-1, 1, size=(1 + i % 3, 512)).astype(np.float32)
        r = infer_request("mlp", {"x": x})
        kind = i % 6
        if kind == 1:
            r.inputs[0].shape[1] = 511
        elif kind == 3:
            r.model_name = "no_such_model"
        elif kind == 4:
            r.inputs[0].datatype = "FP32\x00"
        elif kind == 5:
            r.inputs[0].shape[0] = (1 << 55) + 1
            r.raw_input_contents[0] = x[:1].tobytes()
        if i == 29:
            r = pb.ModelInferRequest()
        r.id = f"{'g' if kind in (0, 2) and i != 29 else 'b'}{i}"
        if r.id.startswith("g"):
            goods[r.id] = x
        reqs.append(r)
    answers, errors, end = {}, 0, "OK"
    try:
        for resp in p.stub.ModelStreamInfer(iter(reqs), timeout=15):
            if resp.error_message:
                errors += 1
            else:
                answers[resp.infer_response.id] = decode_outputs(resp.infer_response).get("y")
    except grpc.RpcError as e:
        end = e.code().name
    right = sum(1 for k, x in goods.items() if k in answers and p.mlp_right(answers[k], x))
    bad = len(reqs) - len(goods)
    ok = end == "OK" and right == len(goods) and errors == bad and len(answers) == len(goods)
    return ok, f"{right}/{len(goods)} good answered right, {errors}/{bad} errors, stream {end}"


@case("grpc", "stream_abandoned",
      "10 ModelStreamInfer streams each sending 20 requests of 256 rows and cancelled at once; "
      "then 20 streams opened and dropped with no message",
      "the server survives and serves the next request right")
def _(p):
    x = np.zeros((256, 512), np.float32)
    r = infer_request("mlp", {"x": x})
    calls = []
    for _ in range(10):
        call = p.stub.ModelStreamInfer(iter([r] * 20), timeout=10)
        calls.append(call)
    time.sleep(0.05)
    for call in calls:
        call.cancel()

    def never():
        time.sleep(0.3)
        return
        yield  # noqa: unreachable: a generator that ends without a message
    calls = [p.stub.ModelStreamInfer(never(), timeout=2) for _ in range(20)]
    for call in calls:
        call.cancel()
    return True, "cancelled 10 busy and 20 silent streams"


# ---- raw HTTP/2 on the gRPC port ---------------------------------------------------


@case("grpc-h2", "h2_baseline",
      "a hand-made HTTP/2 ModelInfer (prior knowledge, literal HPACK) with a valid mlp request",
      "a HEADERS, a DATA carrying the answer, trailers (checks this probe's HTTP/2 client)")
def _(p):
    c = H2Conn(p.grpc_port)
    try:
        c.send(h2_frame(HEADERS, END_HEADERS, 1, grpc_header_block()) +
               h2_frame(DATA, END_STREAM, 1, grpc_message(_good_req().SerializeToString())))
        c.pump(5, until=lambda fr: any(t == HEADERS and f & END_STREAM and s == 1 for t, f, s, _ in fr))
        data = b"".join(pl for t, _, s, pl in c.frames if t == DATA and s == 1)
        ok = False
        if len(data) > 5:
            resp = pb.ModelInferResponse.FromString(data[5:])
            ok = p.mlp_right(decode_outputs(resp).get("y"), _x1())
        return ok, c.describe() + (" answer right" if ok else "")
    finally:
        c.close()


def _no_answer(c, sid):
    """No DATA frame on stream sid: the request got no successful answer."""
    return not any(t == DATA and s == sid for t, _, s, _ in c.frames)


def _h2_answer(c, sid):
    """The ModelInferResponse carried on stream sid, or None."""
    data = b"".join(pl for t, _, s, pl in c.frames if t == DATA and s == sid)
    if len(data) < 5:
        return None
    try:
        return pb.ModelInferResponse.FromString(data[5:5 + struct.unpack(">I", data[1:5])[0]])
    except Exception:  # noqa: BLE001
        return None


@case("grpc-h2", "h2_grpc_framing_lies",
      "raw HTTP/2 ModelInfer streams: a gRPC length prefix of 0xFFFFFFF0 with 16 bytes then "
      "END_STREAM; the compressed flag set on an uncompressed message with no grpc-encoding; a "
      "prefix of 3 bytes only; content-type text/html; then, tolerated either way: two messages "
      "on a unary call, grpc-timeout 'xyzS'",
      "the first four end without an answer (trailers with an error, RST_STREAM or GOAWAY; "
      "grpc-go and grpc-java answer INTERNAL to a compressed flag with identity encoding, and "
      "graphserve refuses compressed requests); the last two: no answer, or one right answer")
def _(p):
    v = Variants()
    good = _good_req().SerializeToString()
    variants = [("length lie", grpc_header_block(), grpc_message(good[:16], length=0xFFFFFFF0), False),
                ("compressed flag", grpc_header_block(), grpc_message(good, compressed=1), False),
                ("short prefix", grpc_header_block(), b"\x00\x00\x00", False),
                ("text/html", hpack_headers([(":method", "POST"), (":scheme", "http"),
                                              (":path", "/inference.GRPCInferenceService/ModelInfer"),
                                              (":authority", "a"), ("content-type", "text/html")]),
                 grpc_message(good), False),
                ("two messages", grpc_header_block(), grpc_message(good) + grpc_message(good), True),
                ("bad timeout", grpc_header_block(extra=[("grpc-timeout", "xyzS")]), grpc_message(good), True)]
    for label, block, payload, tolerated in variants:
        c = H2Conn(p.grpc_port)
        try:
            c.send(h2_frame(HEADERS, END_HEADERS, 1, block) + h2_frame(DATA, END_STREAM, 1, payload))
            c.pump(3, until=lambda fr: any(
                (t == HEADERS and f & END_STREAM and s == 1) or (t == RST_STREAM and s == 1) or
                t == GOAWAY for t, f, s, _ in fr))
            ended = any((t == HEADERS and f & END_STREAM and s == 1) or (t == RST_STREAM and s == 1)
                        or t == GOAWAY for t, f, s, _ in c.frames) or c.closed
            answer = _h2_answer(c, 1)
            right = answer is not None and p.mlp_right(decode_outputs(answer).get("y"), _x1())
            if tolerated:
                ok = ended and (_no_answer(c, 1) or right)
            else:
                ok = ended and _no_answer(c, 1)
            v.add(label, ok, c.describe() + (" answered right" if right else ""))
        finally:
            c.close()
    return v.result()


@case("grpc-h2", "h2_rapid_reset",
      "one connection: 3000 ModelInfer HEADERS (256-row requests, no END_STREAM) each followed "
      "at once by RST_STREAM (CVE-2023-44487 pattern); a regular client infers meanwhile",
      "the server survives (GOAWAY/close allowed) and the regular client is answered right")
def _(p):
    c = H2Conn(p.grpc_port)
    try:
        block = grpc_header_block()
        batch = b""
        sent = 0
        for i in range(3000):
            sid = 1 + 2 * i
            batch += h2_frame(HEADERS, END_HEADERS, sid, block) + \
                h2_frame(RST_STREAM, 0, sid, (8).to_bytes(4, "big"))
            if len(batch) > 64 << 10:
                if not c.send(batch):
                    break
                sent = i + 1
                batch = b""
        if batch and c.send(batch):
            sent = 3000
        c.pump(0.5)
        code, details, resp = p.grpc_infer(_good_req(p.x_good))
        ok = code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good)
        return ok, f"{sent} pairs sent; {c.describe()}; regular client {code.name}"
    finally:
        c.close()


@case("grpc-h2", "h2_continuation_flood",
      "HEADERS without END_HEADERS then up to 20000 CONTINUATION frames of 1 KiB of literal "
      "headers (20 MiB; CVE-2024-27316 pattern)",
      "the server stops it (GOAWAY, RST or close) before taking it all, survives, RSS not grown "
      "by over 512 MiB")
def _(p):
    before = p.rss_mib()
    c = H2Conn(p.grpc_port)
    try:
        c.send(h2_frame(HEADERS, 0, 1, grpc_header_block()))
        frag = hpack_headers([("x-flood", "v" * 1000)])
        chunk = b"".join(h2_frame(CONTINUATION, 0, 1, frag) for _ in range(64))
        sent = 0
        c.sock.settimeout(2)
        while sent < 20000:
            if not c.send(chunk):
                break
            sent += 64
        c.pump(2)
        after = p.rss_mib()
        grown = (after - before) if before and after else 0
        stopped = c.closed or c.goaway_code() is not None or c.send_error is not None or sent < 20000
        return stopped and grown < 512, \
            f"{sent} CONTINUATION frames sent; {c.describe()}; RSS {before or 0:.0f} -> {after or 0:.0f} MiB"
    finally:
        c.close()


@case("grpc-h2", "h2_protocol_violations",
      "separate connections: SETTINGS_MAX_FRAME_SIZE 2^24 (invalid); ENABLE_PUSH 2; "
      "WINDOW_UPDATE +2^31-1 twice on the connection; HEADERS on even stream 2; HEADERS on "
      "stream 5 then on stream 3 (id goes down); a DATA frame on idle stream 7; a HPACK dynamic "
      "table size update to 2^32; 20000 PINGs; after each, a PING on the same connection",
      "the server survives each (GOAWAY/close is RFC 9113's answer; gRPC core ignoring some is "
      "tolerated and recorded); other clients unaffected (the check after the case)")
def _(p):
    v = Variants()
    good = grpc_header_block()
    cases = [("MAX_FRAME_SIZE 2^24", struct.pack(">HI", 5, 1 << 24), b""),
             ("ENABLE_PUSH 2", struct.pack(">HI", 2, 2), b""),
             ("window overflow", b"", h2_frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0x7FFFFFFF)) * 2),
             ("even stream", b"", h2_frame(HEADERS, END_HEADERS, 2, good)),
             ("id goes down", b"", h2_frame(HEADERS, END_HEADERS, 5, good) +
              h2_frame(HEADERS, END_HEADERS, 3, good)),
             ("DATA on idle", b"", h2_frame(DATA, 0, 7, b"\0" * 10)),
             ("table size 2^32", b"", h2_frame(HEADERS, END_HEADERS, 1, hpack_int(1 << 32, 5, 0x20) + good))]
    for label, settings, frames in cases:
        c = H2Conn(p.grpc_port, settings)
        try:
            c.send(frames + h2_frame(PING, 0, 0, b"probe123"))
            c.pump(0.6, until=lambda fr: any(t == GOAWAY for t, _, _, _ in fr) or any(
                t == PING and f & ACK and pl == b"probe123" for t, f, _, pl in fr))
            refused = c.goaway_code() not in (None, 0) or c.closed
            acked = any(t == PING and f & ACK and pl == b"probe123" for t, f, _, pl in c.frames)
            v.add(label, p.server.process.poll() is None,
                  ("refused: " if refused else "IGNORED (no GOAWAY): ") + c.describe() +
                  (" ping acked" if acked else ""))
        finally:
            c.close()
    c = H2Conn(p.grpc_port)
    try:
        c.send(b"".join(h2_frame(PING, 0, 0, struct.pack(">Q", i)) for i in range(20000)))
        c.pump(1.0)
        v.add("20000 PINGs", p.server.process.poll() is None, c.describe())
    finally:
        c.close()
    return v.result()


@case("grpc-h2", "h2_zero_window_hold",
      "one connection with SETTINGS_INITIAL_WINDOW_SIZE 0 opening 100 ModelInfer streams whose "
      "answers it never lets the server send, held 2 s; regular clients infer meanwhile",
      "the regular clients are answered right, each within 2 s; the server frees the held streams "
      "when the connection closes")
def _(p):
    c = H2Conn(p.grpc_port, struct.pack(">HI", 4, 0))
    try:
        msg = grpc_message(infer_request("mlp", {"x": np.ones((2, 512), np.float32)}).SerializeToString())
        out = b""
        for i in range(100):
            sid = 1 + 2 * i
            out += h2_frame(HEADERS, END_HEADERS, sid, grpc_header_block())
            for k in range(0, len(msg), 16384):
                out += h2_frame(DATA, END_STREAM if k + 16384 >= len(msg) else 0, sid, msg[k:k + 16384])
        c.send(out)
        c.pump(0.5)
        oks = []
        for _ in range(3):
            t = time.monotonic()
            code, details, resp = p.grpc_infer(_good_req(p.x_good))
            oks.append(code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good)
                       and time.monotonic() - t < 2)
            c.pump(0.5)
        held = sum(1 for t, _, s, _ in c.frames if t == DATA)
        return all(oks), f"regular clients {oks}; held connection: {c.describe()}, DATA frames {held}"
    finally:
        c.close()


@case("grpc-h2", "grpc_port_garbage",
      "to the gRPC port: an HTTP/1.1 request; 64 KiB of random bytes; the HTTP/2 preface then "
      "garbage; a TLS ClientHello",
      "each connection refused or closed promptly (an HTTP/1.1 error or GOAWAY allowed); server "
      "survives")
def _(p):
    v = Variants()
    rnd = random.Random(11)
    hello = bytes.fromhex("16030100a5010000a10303") + bytes(32) + b"\x00\x00\x02\x13\x01\x01\x00" + bytes(80)
    for label, data in (("http/1.1", req("GET", "/v2/health/ready")),
                        ("random", bytes(rnd.getrandbits(8) for _ in range(65536))),
                        ("preface+garbage", H2_PREFACE + b"\xff" * 4096),
                        ("tls hello", hello)):
        res = raw_http(p.grpc_port, data, want=1, timeout=4, grace=0.2)
        ok = res["closed"] or (res["responses"] and res["responses"][0].get("status") in (400, 403, 505))
        v.add(label, ok, summary(res))
    return v.result()


# ---- shared memory -------------------------------------------------------------------


class ShmObject:
    """A POSIX shared memory object of ours, made through /dev/shm."""

    def __init__(self, size):
        self.key = f"/attack_probe_{os.getpid()}_{random.randrange(1 << 30)}"
        self.path = "/dev/shm" + self.key
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.ftruncate(self.fd, size)

    def write(self, offset, data):
        os.pwrite(self.fd, data, offset)

    def read(self, offset, n):
        return os.pread(self.fd, n, offset)

    def close(self):
        os.close(self.fd)
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _shm_input(request, region, size, offset=None):
    """Moves request's input 0 into a shared-memory region."""
    t = request.inputs[0]
    t.parameters["shared_memory_region"].string_param = region
    t.parameters["shared_memory_byte_size"].int64_param = size
    if offset is not None:
        t.parameters["shared_memory_offset"].int64_param = offset
    del request.raw_input_contents[:]


@case("shared-memory", "shm_register_overflow",
      "SystemSharedMemoryRegister on a real 4 KiB object: offset 2^64-4096 size 8192 (sum wraps "
      "to 4096); offset 0 size 2^64-1; offset 4096 size 1; offset 0 size 0; key "
      "'/../../etc/passwd', '/dev/shm/../x', '', 'no_slash', a 300-byte key; name '' ",
      "INVALID_ARGUMENT (or NOT_FOUND for a missing key) each; none registered")
def _(p):
    v = Variants()
    obj = ShmObject(4096)
    try:
        bad = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
        for label, name, key, off, size in (
                ("wrap", "a1", obj.key, U64 - 4095, 8192), ("size 2^64-1", "a2", obj.key, 0, U64),
                ("past end", "a3", obj.key, 4096, 1), ("size 0", "a4", obj.key, 0, 0),
                ("traversal key", "a5", "/../../etc/passwd", 0, 16), ("dev/shm key", "a6", "/dev/shm/../x", 0, 16),
                ("empty key", "a7", "", 0, 16), ("no slash", "a8", "no_slash_attack", 0, 16),
                ("300-byte key", "a9", "/" + "k" * 300, 0, 16), ("empty name", "", obj.key, 0, 16)):
            code, details, _ = p.grpc_call("SystemSharedMemoryRegister", pb.SystemSharedMemoryRegisterRequest(
                name=name, key=key, offset=off, byte_size=size))
            v.add(label, code in bad, f"{code.name} {details[:80]!r}")
        code, _, status = p.grpc_call("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest())
        names = sorted(status.regions.keys()) if status else None
        v.add("none registered", code == grpc.StatusCode.OK and not names, f"status regions {names}")
    finally:
        p.grpc_call("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest())
        obj.close()
    return v.result()


@case("shared-memory", "shm_infer_range_overflow",
      "a registered 8 KiB region; mlp inputs reading shared_memory_offset 2^63-1, offset 8192-2047 "
      "(ends one byte past), byte_size 2^63, offset -2048, byte_size 2048 offset 2^64-2048 "
      "(as int64 -2048); an output region of 2 bytes; region names never registered",
      "INVALID_ARGUMENT (or NOT_FOUND for unknown regions) each")
def _(p):
    v = Variants()
    obj = ShmObject(8192)
    x = _x1()
    obj.write(0, x.tobytes())
    try:
        code, details, _ = p.grpc_call("SystemSharedMemoryRegister", pb.SystemSharedMemoryRegisterRequest(
            name="atk_in", key=obj.key, offset=0, byte_size=8192))
        v.add("register", code == grpc.StatusCode.OK, code.name)
        bad = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
        for label, off, size, region in (("offset 2^63-1", (1 << 63) - 1, 2048, "atk_in"),
                                         ("one past", 8192 - 2047, 2048, "atk_in"),
                                         ("size 2^63-1", 0, (1 << 63) - 1, "atk_in"),
                                         ("offset -2048", -2048, 2048, "atk_in"),
                                         ("size -1", 0, -1, "atk_in"),
                                         ("unknown region", 0, 2048, "never_registered"),
                                         ("region with slash", 0, 2048, "../atk_in")):
            r = _good_req(x)
            _shm_input(r, region, size, off)
            code, details, _ = p.grpc_infer(r)
            v.add(label, code in bad, f"{code.name} {details[:80]!r}")
        r = _good_req(x)
        r.outputs.add(name="y")
        r.outputs[0].parameters["shared_memory_region"].string_param = "atk_in"
        r.outputs[0].parameters["shared_memory_byte_size"].int64_param = 2
        code, details, _ = p.grpc_infer(r)
        v.add("2-byte output", code in bad, f"{code.name} {details[:80]!r}")
    finally:
        p.grpc_call("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(name="atk_in"))
        obj.close()
    return v.result()


@case("shared-memory", "shm_overlapping_input_output",
      "one 64 KiB region; mlp input of 3 rows at offset 0 and the output y written at offset 0 "
      "of the same region (overlapping the input)",
      "OK; the region then holds the reference answer (inputs read before outputs written)")
def _(p):
    obj = ShmObject(65536)
    x = p.x_good
    obj.write(0, x.tobytes())
    try:
        code, details, _ = p.grpc_call("SystemSharedMemoryRegister", pb.SystemSharedMemoryRegisterRequest(
            name="atk_ovl", key=obj.key, offset=0, byte_size=65536))
        if code != grpc.StatusCode.OK:
            return False, f"register {code.name} {details}"
        r = infer_request("mlp", {"x": x}, outputs=["y"])
        _shm_input(r, "atk_ovl", x.nbytes, 0)
        r.outputs[0].parameters["shared_memory_region"].string_param = "atk_ovl"
        r.outputs[0].parameters["shared_memory_byte_size"].int64_param = 12
        r.outputs[0].parameters["shared_memory_offset"].int64_param = 0
        code, details, _ = p.grpc_infer(r)
        y = np.frombuffer(obj.read(0, 12), np.float32).reshape(3, 1)
        ok = code == grpc.StatusCode.OK and p.mlp_right(y, x)
        return ok, f"{code.name} {details[:60]!r} region y={y.ravel()} want {p.y_good.ravel()}"
    finally:
        p.grpc_call("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(name="atk_ovl"))
        obj.close()


@case("shared-memory", "shm_truncated_under_server",
      "register a 1 MiB object, ftruncate it to 0 behind the server's back, then infer mlp "
      "reading 3 rows at offset 512 KiB and writing y at offset 768 KiB",
      "the server survives (no SIGBUS death): an error status, or an answer; then unregister OK")
def _(p):
    obj = ShmObject(1 << 20)
    x = p.x_good
    obj.write(512 << 10, x.tobytes())
    try:
        code, details, _ = p.grpc_call("SystemSharedMemoryRegister", pb.SystemSharedMemoryRegisterRequest(
            name="atk_trunc", key=obj.key, offset=0, byte_size=1 << 20))
        if code != grpc.StatusCode.OK:
            return False, f"register {code.name} {details}"
        os.ftruncate(obj.fd, 0)
        r = infer_request("mlp", {"x": x}, outputs=["y"])
        _shm_input(r, "atk_trunc", x.nbytes, 512 << 10)
        r.outputs[0].parameters["shared_memory_region"].string_param = "atk_trunc"
        r.outputs[0].parameters["shared_memory_byte_size"].int64_param = 12
        r.outputs[0].parameters["shared_memory_offset"].int64_param = 768 << 10
        code, details, _ = p.grpc_infer(r)
        ucode, udetails, _ = p.grpc_call("SystemSharedMemoryUnregister",
                                         pb.SystemSharedMemoryUnregisterRequest(name="atk_trunc"))
        alive = p.server.process.poll() is None
        return alive and ucode == grpc.StatusCode.OK, \
            f"infer {code.name} {details[:90]!r}; unregister {ucode.name}"
    finally:
        p.grpc_call("SystemSharedMemoryUnregister", pb.SystemSharedMemoryUnregisterRequest(name="atk_trunc"))
        obj.close()


@case("shared-memory", "shm_names_and_unregister",
      "unregister a name never registered (gRPC and HTTP); register names 'a/b' (HTTP a%2Fb), "
      "'..', 64 KiB long, with NUL, with a newline; HTTP register bodies with offset -1, byte_size "
      "'1e3', missing key; status of an unknown region",
      "unknown unregister: OK/200 or NOT_FOUND/404; odd names: registered and listed under the "
      "same name, or refused 4xx / INVALID_ARGUMENT; never 5xx; unknown status: NOT_FOUND/404")
def _(p):
    v = Variants()
    obj = ShmObject(4096)
    try:
        code, details, _ = p.grpc_call("SystemSharedMemoryUnregister",
                                       pb.SystemSharedMemoryUnregisterRequest(name="never_registered_x"))
        v.add("grpc unknown unregister", code in (grpc.StatusCode.OK, grpc.StatusCode.NOT_FOUND), code.name)
        status, _, data = p.http("POST", "/v2/systemsharedmemory/region/never_registered_x/unregister", b"")
        v.add("http unknown unregister", status in (200, 404), f"{status} {data[:60]!r}")
        for label, name in (("slash", "a/b"), ("dotdot", ".."), ("64 KiB", "n" * 65536),
                            ("NUL", "a\x00b"), ("newline", "a\nb")):
            code, details, _ = p.grpc_call("SystemSharedMemoryRegister", pb.SystemSharedMemoryRegisterRequest(
                name=name, key=obj.key, offset=0, byte_size=4096))
            listed = None
            if code == grpc.StatusCode.OK:
                scode, _, st = p.grpc_call("SystemSharedMemoryStatus", pb.SystemSharedMemoryStatusRequest(name=name))
                listed = scode == grpc.StatusCode.OK and name in st.regions
                ucode, _, _ = p.grpc_call("SystemSharedMemoryUnregister",
                                          pb.SystemSharedMemoryUnregisterRequest(name=name))
                listed = listed and ucode == grpc.StatusCode.OK
            ok = code == grpc.StatusCode.INVALID_ARGUMENT or (code == grpc.StatusCode.OK and listed)
            v.add(f"grpc name {label}", ok, f"{code.name} {details[:60]!r} listed+unregistered={listed}")
        for label, path, body in (
                ("http a%2Fb", "/v2/systemsharedmemory/region/a%2Fb/register",
                 json.dumps({"key": obj.key, "offset": 0, "byte_size": 4096})),
                ("offset -1", "/v2/systemsharedmemory/region/atk_h/register",
                 json.dumps({"key": obj.key, "offset": -1, "byte_size": 16})),
                ("size '1e3'", "/v2/systemsharedmemory/region/atk_h/register",
                 json.dumps({"key": obj.key, "byte_size": "1e3"})),
                ("no key", "/v2/systemsharedmemory/region/atk_h/register", json.dumps({"byte_size": 16})),
                ("size 2^64", "/v2/systemsharedmemory/region/atk_h/register",
                 json.dumps({"key": obj.key, "byte_size": 1 << 64}))):
            status, _, data = p.http("POST", path, body)
            ok = status in (400, 404) or (label == "http a%2Fb" and status == 200)
            v.add(label, ok, f"{status} {data[:70]!r}")
        status, _, data = p.http("GET", "/v2/systemsharedmemory/region/nope_x/status")
        v.add("unknown status", status in (400, 404), f"{status} {data[:60]!r}")
    finally:
        p.http("POST", "/v2/systemsharedmemory/unregister", b"")
        obj.close()
    return v.result()


@case("shared-memory", "cuda_shm_garbage_handles",
      "CudaSharedMemoryRegister with a 64-byte random raw_handle on device 0; an empty handle; "
      "a 1 MiB handle; device_id -1 and 2^31-1; byte_size 2^64-1; HTTP register with b64 'AAAA', "
      "invalid base64 and raw_handle a number",
      "a refusal each (INVALID_ARGUMENT / FAILED_PRECONDITION / NOT_FOUND; HTTP 4xx); nothing "
      "registered; on a GPU no sticky CUDA error (the next inference right)")
def _(p):
    v = Variants()
    refusals = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
                grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE)
    rnd = random.Random(3)
    handle = bytes(rnd.getrandbits(8) for _ in range(64))
    for label, h, dev, size in (("random handle", handle, 0, 4096), ("empty handle", b"", 0, 4096),
                                ("1 MiB handle", b"\x01" * (1 << 20), 0, 4096), ("device -1", handle, -1, 4096),
                                ("device 2^31-1", handle, (1 << 31) - 1, 4096), ("size 2^64-1", handle, 0, U64)):
        code, details, _ = p.grpc_call("CudaSharedMemoryRegister", pb.CudaSharedMemoryRegisterRequest(
            name="atk_cuda", raw_handle=h, device_id=dev, byte_size=size))
        v.add(label, code in refusals, f"{code.name} {details[:70]!r}")
        if code == grpc.StatusCode.OK:
            p.grpc_call("CudaSharedMemoryUnregister", pb.CudaSharedMemoryUnregisterRequest(name="atk_cuda"))
    for label, body in (("b64 AAAA", {"raw_handle": {"b64": "AAAA"}, "device_id": 0, "byte_size": 16}),
                        ("bad base64", {"raw_handle": {"b64": "!!!*"}, "device_id": 0, "byte_size": 16}),
                        ("handle number", {"raw_handle": 5, "device_id": 0, "byte_size": 16}),
                        ("64B random", {"raw_handle": {"b64": base64.b64encode(handle).decode()},
                                        "device_id": 0, "byte_size": 16})):
        status, _, data = p.http("POST", "/v2/cudasharedmemory/region/atk_cuda_h/register", json.dumps(body))
        v.add(f"http {label}", is4xx(status) or status == 501, f"{status} {data[:70]!r}")
    code, _, st = p.grpc_call("CudaSharedMemoryStatus", pb.CudaSharedMemoryStatusRequest())
    names = sorted(st.regions.keys()) if st else None
    v.add("none registered", code == grpc.StatusCode.OK and not names, f"{code.name} {names}")
    return v.result()


# ---- model control ---------------------------------------------------------------------


def _outside_model(p):
    """A copy of mlp under a directory outside the repository, as 'evilmodel'."""
    root = os.path.join(p.tmp, "outside")
    model = os.path.join(root, "evilmodel")
    if not os.path.isdir(model):
        os.makedirs(os.path.join(model, "1"))
        with open(os.path.join(p.repository, "mlp", "config.pbtxt")) as f:
            config = f.read().replace('name: "mlp"', 'name: "evilmodel"')
        with open(os.path.join(model, "config.pbtxt"), "w") as f:
            f.write(config)
        with open(os.path.join(p.repository, "mlp", "1", "model.onnx"), "rb") as f, \
                open(os.path.join(model, "1", "model.onnx"), "wb") as g:
            g.write(f.read())
    return root, model


def _evil_loaded(p):
    status, _, data = p.http("POST", "/v2/repository/index", b"{}")
    return b"evilmodel" in data or any(p.model_ready(n) for n in ("evilmodel",))


@case("model-control", "load_path_traversal",
      "a copy of mlp placed outside the repository; RepositoryModelLoad/HTTP load of its relative "
      "path '../../<tmp>/outside/evilmodel', percent-encoded '..%2F', '%2e%2e', the absolute path, "
      "'mlp/../../outside/evilmodel', 'mlp%00', '.', '..', '.hidden' over HTTP and gRPC",
      "refused each (any 4xx; INTERNAL/500 'failed to poll from model repository', Triton's "
      "answer, is judged by load_unknown_model_status); the outside model never loaded or listed")
def _(p):
    v = Variants()
    root, model = _outside_model(p)
    rel = os.path.relpath(model, p.repository)
    names = [rel, "mlp/../" + rel, model, ".", "..", ".hidden", "mlp\x00evil", "evilmodel"]
    for name in names:
        code, details, _ = p.grpc_call("RepositoryModelLoad", pb.RepositoryModelLoadRequest(model_name=name),
                                       timeout=30)
        v.add(f"grpc {name[:40]!r}", code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND) or (
            code == grpc.StatusCode.INTERNAL and "failed to poll" in details), f"{code.name} {details[:70]!r}")
    from urllib.parse import quote
    for path in (quote(rel, safe=""), quote(rel, safe="/"), rel.replace("..", "%2e%2e"),
                 quote(model, safe=""), "mlp%00evil", "%2e%2e", "."):
        res = raw_http(p.http_port, req("POST", f"/v2/repository/models/{path}/load", ["Content-Length: 0"]),
                       timeout=30)
        got = statuses(res)
        body = res["responses"][0].get("body", b"") if res["responses"] else b""
        v.add(f"http {path[:40]}", len(got) == 1 and (is4xx(got[0]) or (got[0] == 500 and b"failed to poll" in body)),
              summary(res))
    v.add("outside model not loaded", not _evil_loaded(p), "checked the index and readiness")
    return v.result()


@case("model-control", "load_unknown_model_status",
      "load requests for models the repository does not hold: HTTP POST /v2/repository/models/"
      "nosuchmodel/load, '..' (%2e%2e), 'mlp%00evil'; gRPC RepositoryModelLoad 'nosuchmodel', '..'",
      "a client error: HTTP 400/404, gRPC NOT_FOUND/INVALID_ARGUMENT; not 500/INTERNAL (note: "
      "Triton answers this INTERNAL too, so this case judges the status code only)")
def _(p):
    v = Variants()
    for path in ("nosuchmodel", "%2e%2e", "mlp%00evil"):
        status, _, data = p.http("POST", f"/v2/repository/models/{path}/load", b"", timeout=30)
        v.add(f"http {path}", is4xx(status), f"{status} {data[:80]!r}")
    for name in ("nosuchmodel", ".."):
        code, details, _ = p.grpc_call("RepositoryModelLoad", pb.RepositoryModelLoadRequest(model_name=name),
                                       timeout=30)
        v.add(f"grpc {name}", code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND),
              f"{code.name} {details[:80]!r}")
    return v.result()


@case("model-control", "load_config_malformed",
      "HTTP load of mlp with parameters.config: truncated JSON; JSON nested 5000 deep; 48 MiB "
      "config (a 48 MiB platform name); a number; an array; an object instead of a string; UTF-8 garbage; config "
      "with max_batch_size -1, 'abc', 2^70",
      "400 each (501 for the 48 MiB unsupported platform), and mlp keeps serving right")
def _(p):
    v = Variants()
    for label, params in (("truncated", {"config": '{"name": "mlp", '}),
                          ("deep", {"config": "[" * 5000 + "]" * 5000}),
                          ("48 MiB", {"config": '{"name": "mlp", "platform": "' + "p" * (48 << 20) + '"}'}),
                          ("number", {"config": 5}), ("array", {"config": [1, 2]}),
                          ("object", {"config": {"name": "mlp"}}),
                          ("garbage", {"config": "\u00ff\ufffe\u0000{"}),
                          ("mbs -1", {"config": json.dumps({"name": "mlp", "max_batch_size": -1})}),
                          ("mbs abc", {"config": json.dumps({"name": "mlp", "max_batch_size": "abc"})}),
                          ("mbs 2^70", {"config": json.dumps({"name": "mlp", "max_batch_size": 1 << 70})})):
        t = time.monotonic()
        try:
            status, _, data = p.http("POST", "/v2/repository/models/mlp/load",
                                     json.dumps({"parameters": params}), timeout=30)
            obs = f"{status} {data[:80]!r}"
        except OSError as e:
            status, obs = None, type(e).__name__
        v.add(label, status in ((400, 413, 501) if label == "48 MiB" else (400, 413)),
              f"{obs} {time.monotonic() - t:.1f}s")
    code, _, resp = p.grpc_infer(_good_req(p.x_good))
    v.add("mlp serves", code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good),
          code.name)
    return v.result()


# The served models' own configs (GET .../config), the base of every load
# config here: a load of the config a model already has costs no more than a
# reload (on a GPU it keeps the measured costs), so only the change is tested.
BASE_CONFIGS = {}


def _config(model="mlp", **changes):
    base = json.loads(json.dumps(BASE_CONFIGS.get(model) or {
        "name": "mlp", "platform": "graphserve_onnx", "max_batch_size": 256,
        "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [512]}],
        "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [1]}]}))
    base.update(changes)
    return json.dumps(base)


@case("model-control", "load_config_hostile_values",
      "HTTP load of mlp with configs: name 'dlrm_dense'; default_model_filename "
      "'../../dlrm_dense/1/model.onnx'; label_filename '../../../../etc/passwd'; input dims "
      "[2^40]; capture batch_sizes [2^40]; max_batch_size 2^31-1; capture streams 2^20; "
      "instance_group count 2^31-1; input x declared as TYPE_STRING",
      "400 each, and mlp keeps serving right (the loaded version keeps serving)")
def _(p):
    v = Variants()
    for label, cfg in (("name", _config(name="dlrm_dense")),
                       ("model filename", _config(default_model_filename="../../dlrm_dense/1/model.onnx")),
                       ("label file", _config(output=[{"name": "y", "data_type": "TYPE_FP32", "dims": [1],
                                                       "label_filename": "../../../../etc/passwd"}])),
                       ("dims 2^40", _config(input=[{"name": "x", "data_type": "TYPE_FP32", "dims": [1 << 40]}])),
                       ("batch_sizes 2^40", _config(capture={"batch_sizes": [1 << 40]})),
                       ("max_batch 2^31-1", _config(max_batch_size=(1 << 31) - 1)),
                       ("streams 2^20", _config(capture={"batch_sizes": [1, 4], "streams": 1 << 20})),
                       ("count 2^31-1", _config(instance_group=[{"count": (1 << 31) - 1, "kind": "KIND_CPU"}])),
                       ("TYPE_STRING", _config(input=[{"name": "x", "data_type": "TYPE_STRING", "dims": [512]}]))):
        status, data = p.load("mlp", cfg)
        v.add(label, status == 400, f"{status} {data[:90]!r}")
    code, _, resp = p.grpc_infer(_good_req(p.x_good))
    v.add("mlp serves", code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good),
          code.name)
    return v.result()


@case("model-control", "load_config_accepted_oddities",
      "HTTP load of mlp with configs the server may accept: capture max_lanes 2^30; "
      "instance_group KIND_GPU gpus [4096]; dynamic_batching max_queue_delay_microseconds 2^64-1; "
      "each followed by an inference; then a plain reload from config.pbtxt",
      "each 200 (then mlp answers right) or 400; gpus [4096] must be 400 on a GPU server (the "
      "host executor serves GPU configs on the host, so 200 there); the plain reload 200 and "
      "right answers")
def _(p):
    v = Variants()
    on_gpu = p.args.device != "cpu"
    for label, cfg in (("max_lanes 2^30", _config(capture={"batch_sizes": [1, 4, 16], "max_lanes": 1 << 30})),
                       ("gpus [4096]", _config(instance_group=[{"kind": "KIND_GPU", "gpus": [4096], "count": 1}])),
                       ("queue delay 2^64-1", _config(dynamic_batching={"max_queue_delay_microseconds": U64}))):
        status, data = p.load("mlp", cfg)
        x = p.x_good
        code, details, resp = p.grpc_infer(_good_req(x))
        right = code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), x)
        ok = (status == 400 or status == 200) and right
        if label == "gpus [4096]" and on_gpu:
            ok = status == 400 and right
        v.add(label, ok, f"load {status} {data[:70]!r}; infer {code.name} {'right' if right else details[:60]}")
    status, data = p.load("mlp")
    code, _, resp = p.grpc_infer(_good_req(p.x_good))
    v.add("plain reload", status == 200 and code == grpc.StatusCode.OK and
          p.mlp_right(decode_outputs(resp).get("y"), p.x_good), f"{status} {code.name}")
    return v.result()


@case("model-control", "load_file_override_traversal",
      "HTTP load of mlp with Triton's file override parameters: 'file:../../../../<tmp>/pwned' "
      "(base64 bytes) with a config; 'file:1/model.onnx' holding garbage bytes; over gRPC "
      "bytes_param 'file:/etc/cron.d/x'",
      "400 / INVALID_ARGUMENT (or UNIMPLEMENTED) each; no file written outside the repository; mlp "
      "keeps serving right")
def _(p):
    v = Variants()
    target = os.path.join(p.tmp, "pwned")
    rel = os.path.relpath(target, os.path.join(p.repository, "mlp"))
    payload = base64.b64encode(b"pwned").decode()
    for label, params in ((f"file:{rel}", {"config": _config(), f"file:{rel}": payload}),
                          ("file:1/model.onnx", {"config": _config(),
                                                 "file:1/model.onnx": base64.b64encode(b"\0garbage" * 64).decode()})):
        status, _, data = p.http("POST", "/v2/repository/models/mlp/load",
                                 json.dumps({"parameters": params}), timeout=30)
        v.add(label, status in (400, 501), f"{status} {data[:90]!r}")
    r = pb.RepositoryModelLoadRequest(model_name="mlp")
    r.parameters["config"].string_param = _config()
    r.parameters["file:" + os.path.relpath("/tmp/attack_probe_cron_x", os.path.join(p.repository, "mlp"))].bytes_param = b"x"
    code, details, _ = p.grpc_call("RepositoryModelLoad", r, timeout=30)
    v.add("grpc file:", code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED),
          f"{code.name} {details[:80]!r}")
    written = [f for f in (target, "/tmp/attack_probe_cron_x") if os.path.exists(f)]
    v.add("nothing written", not written, f"written: {written}")
    status, _ = p.load("mlp")
    code, _, resp = p.grpc_infer(_good_req(p.x_good))
    v.add("mlp serves", code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good),
          f"reload {status} infer {code.name}")
    return v.result()


@case("model-control", "unload_tricks",
      "unload '../mlp', 'mlp\\x00', '', 'mlp/', './mlp' over gRPC and '..%2fmlp', 'mlp%2f..%2fmlp', "
      "'mlp%00', './mlp', 'mlp%2F', 'mlp%20', 'MLP' over HTTP; unload of 'nope'; "
      "index bodies {'ready': 'yes'}, [], '\"x\"', {'ready': 1}",
      "400/404 (INVALID_ARGUMENT/NOT_FOUND) for the odd names, mlp still loaded; unknown 'nope': "
      "200/400/404; index bodies 200 or 400")
def _(p):
    v = Variants()
    missing = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    for name in ("../mlp", "mlp\x00", "", "mlp/", "./mlp"):
        code, details, _ = p.grpc_call("RepositoryModelUnload", pb.RepositoryModelUnloadRequest(model_name=name),
                                       timeout=30)
        v.add(f"grpc {name!r}", code in missing, f"{code.name} {details[:60]!r}")
    for path in ("..%2fmlp", "mlp%2f..%2fmlp", "mlp%00", "./mlp", "mlp%2F", "mlp%20", "MLP"):
        res = raw_http(p.http_port, req("POST", f"/v2/repository/models/{path}/unload", ["Content-Length: 0"]),
                       timeout=30)
        v.add(f"http {path}", refused_with(res, {400, 404}), summary(res))
    still = p.model_ready("mlp")
    v.add("mlp still ready", still, "")
    if not still:
        p.load("mlp")
    status, _, data = p.http("POST", "/v2/repository/models/nope_x/unload", b"")
    v.add("unknown", status in (200, 400, 404), f"{status} {data[:60]!r}")
    for body in ('{"ready": "yes"}', "[]", '"x"', '{"ready": 1}', '{"ready": true, "x": [[[[]]]]}'):
        status, _, data = p.http("POST", "/v2/repository/index", body)
        v.add(f"index {body}", status in (200, 400), f"{status} {data[:60]!r}")
    return v.result()


def _dlrm_feeds(rows=2, seed=9):
    return gp.random_inputs(gp.DEMO_INPUTS["dlrm_dense"], rows, seed)


@case("model-control", "unload_then_infer_then_reload",
      "unload dlrm_dense, infer it over gRPC and HTTP, then load it again and infer",
      "after unload: NOT_FOUND/UNAVAILABLE (HTTP 400/404/503); after load: the reference answer")
def _(p):
    v = Variants()
    feeds = _dlrm_feeds()
    want = p.reference("dlrm_dense", feeds)["prob"]
    status, _, data = p.http("POST", "/v2/repository/models/dlrm_dense/unload", b"", timeout=30)
    v.add("unload", status == 200, f"{status} {data[:60]!r}")
    code, details, _ = p.grpc_infer(infer_request("dlrm_dense", feeds))
    v.add("grpc infer", code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE),
          f"{code.name} {details[:60]!r}")
    body = json.dumps({"inputs": [{"name": k, "datatype": "FP32", "shape": list(a.shape),
                                   "data": a.ravel().tolist()} for k, a in feeds.items()]})
    status, _, data = p.http_infer("dlrm_dense", body)
    v.add("http infer", status in (400, 404, 503), f"{status} {data[:60]!r}")
    status, data = p.load("dlrm_dense")
    code, details, resp = p.grpc_infer(infer_request("dlrm_dense", feeds))
    got = decode_outputs(resp).get("prob") if resp else None
    v.add("reload", status == 200 and code == grpc.StatusCode.OK and got is not None and
          gp.relative_error(got, want) <= TOLERANCE, f"load {status} infer {code.name}")
    return v.result()


@case("model-control", "load_unload_storm",
      "4 threads loading/unloading dlrm_dense 12 times each (with and without a config override) "
      "while 2 threads infer mlp and 1 thread infers dlrm_dense, for at most 15 s; then a final "
      "load of dlrm_dense",
      "every mlp answer right; every dlrm_dense answer right or NOT_FOUND/UNAVAILABLE; every "
      "control call 200 or 400/404/409; final load 200 and dlrm_dense right")
def _(p):
    stop = threading.Event()
    lock = threading.Lock()
    tally = {"mlp_ok": 0, "mlp_bad": [], "dlrm_ok": 0, "dlrm_refused": 0, "dlrm_bad": [],
             "ctl": {}, "ctl_bad": []}
    feeds = _dlrm_feeds(rows=3, seed=4)
    dlrm_want = p.reference("dlrm_dense", feeds)["prob"]
    dlrm_config = _config("dlrm_dense")

    def controller(k):
        for i in range(12):
            if stop.is_set():
                return
            try:
                if (i + k) % 2:
                    status, _, data = p.http("POST", "/v2/repository/models/dlrm_dense/unload", b"", timeout=20)
                else:
                    body = json.dumps({"parameters": {"config": dlrm_config}}) if i % 4 == 0 else b""
                    status, _, data = p.http("POST", "/v2/repository/models/dlrm_dense/load", body, timeout=20)
            except OSError as e:
                status, data = None, str(e).encode()
            with lock:
                tally["ctl"][status] = tally["ctl"].get(status, 0) + 1
                if status not in (200, 400, 404, 409):
                    tally["ctl_bad"].append(f"{status} {data[:80]!r}")

    def mlp_client(seed):
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            x = rng.uniform(-1, 1, size=(int(rng.integers(1, 9)), 512)).astype(np.float32)
            code, details, resp = p.grpc_infer(_good_req(x))
            with lock:
                if code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), x):
                    tally["mlp_ok"] += 1
                else:
                    tally["mlp_bad"].append(f"{code.name} {details[:60]}")

    def dlrm_client():
        while not stop.is_set():
            code, details, resp = p.grpc_infer(infer_request("dlrm_dense", feeds))
            with lock:
                if code == grpc.StatusCode.OK:
                    got = decode_outputs(resp).get("prob")
                    if got is not None and gp.relative_error(got, dlrm_want) <= TOLERANCE:
                        tally["dlrm_ok"] += 1
                    else:
                        tally["dlrm_bad"].append("wrong answer")
                elif code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE):
                    tally["dlrm_refused"] += 1
                else:
                    tally["dlrm_bad"].append(f"{code.name} {details[:60]}")

    ctl = [threading.Thread(target=controller, args=(k,), daemon=True) for k in range(4)]
    users = [threading.Thread(target=mlp_client, args=(s,), daemon=True) for s in (1, 2)] + \
        [threading.Thread(target=dlrm_client, daemon=True)]
    for t in ctl + users:
        t.start()
    deadline = time.monotonic() + 15
    for t in ctl:
        t.join(timeout=max(0.1, deadline - time.monotonic()))
    stop.set()
    for t in users:
        t.join(timeout=12)
    status, data = p.load("dlrm_dense")
    code, details, resp = p.grpc_infer(infer_request("dlrm_dense", feeds))
    final = status == 200 and code == grpc.StatusCode.OK and \
        gp.relative_error(decode_outputs(resp).get("prob"), dlrm_want) <= TOLERANCE
    ok = final and not tally["mlp_bad"] and not tally["dlrm_bad"] and not tally["ctl_bad"] and tally["mlp_ok"] > 0
    obs = (f"mlp {tally['mlp_ok']} right, bad {tally['mlp_bad'][:3]}; dlrm {tally['dlrm_ok']} right, "
           f"{tally['dlrm_refused']} refused, bad {tally['dlrm_bad'][:3]}; control statuses {tally['ctl']} "
           f"bad {tally['ctl_bad'][:3]}; final load {status} infer {code.name}")
    return ok, obs


@case("model-control", "concurrent_conflicting_loads",
      "6 simultaneous HTTP loads of mlp, alternately a good config and one with dims [511]; then "
      "a plain load",
      "each 200 or 400/409; mlp right throughout and after the plain load")
def _(p):
    results = []

    def load(i):
        cfg = _config() if i % 2 == 0 else _config(input=[{"name": "x", "data_type": "TYPE_FP32", "dims": [511]}])
        try:
            results.append(p.load("mlp", cfg)[0])
        except OSError as e:
            results.append(type(e).__name__)
    threads = [threading.Thread(target=load, args=(i,), daemon=True) for i in range(6)]
    for t in threads:
        t.start()
    mid = []
    for _ in range(5):
        code, _, resp = p.grpc_infer(_good_req(p.x_good))
        mid.append(code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good))
    for t in threads:
        t.join(timeout=30)
    status, _ = p.load("mlp")
    code, _, resp = p.grpc_infer(_good_req(p.x_good))
    after = code == grpc.StatusCode.OK and p.mlp_right(decode_outputs(resp).get("y"), p.x_good)
    ok = all(r in (200, 400, 409) for r in results) and all(mid) and status == 200 and after
    return ok, f"load statuses {sorted(map(str, results))}; mlp during {mid}; plain load {status}, after {after}"


# ---- metrics port ------------------------------------------------------------------------

PROM_LINE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? '
                       r'[-+]?([0-9.eE+-]+|NaN|Inf|\+Inf|-Inf)( -?[0-9]+)?$')


@case("metrics", "metrics_methods_and_paths",
      "to the metrics port: POST/PUT/DELETE/PATCH /metrics with a body; GET /metrics/../metrics, "
      "/%2e%2e/%2e%2e/etc/passwd, /metrics%00, //metrics, /metrics?%ff, /v2/health/ready; HEAD "
      "/metrics",
      "the odd methods 4xx or 501 (or 200 served as GET); paths 200 or 404/400, never a file; HEAD "
      "200 with headers only")
def _(p):
    v = Variants()
    port = p.metrics_port
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        res = raw_http(port, req(method, "/metrics", ["Content-Length: 5"], b"hello"))
        v.add(method, refused_with(res, {200, 400, 404, 405, 501}), summary(res))
    for path in ("/metrics/../metrics", "/%2e%2e/%2e%2e/etc/passwd", "/metrics%00", "//metrics",
                 "/metrics?%ff", "/v2/health/ready", "/../../../../etc/passwd"):
        res = raw_http(port, req("GET", path))
        leak = any(b"root:" in r.get("body", b"") for r in res["responses"])
        v.add(path, refused_with(res, {200, 400, 404}) and not leak, summary(res))
    res = raw_http(port, req("HEAD", "/metrics"), want=1, head_indices=(0,), grace=0.5)
    head_len = len(req("HEAD", "/metrics"))
    ok = statuses(res) == [200] and res["raw_bytes"] < 1024
    v.add("HEAD", ok, f"{summary(res)}, {res['raw_bytes']} bytes back")
    return v.result()


@case("metrics", "metrics_framing_attacks",
      "to the metrics port: Content-Length + Transfer-Encoding with a hidden GET; a 1 MiB header; "
      "20000 headers; 100 idle connections then a GET",
      "smuggle: 4xx and no hidden answer; oversized: 4xx or a drop; a GET served while the idle "
      "connections are held")
def _(p):
    v = Variants()
    port = p.metrics_port
    res = raw_http(port, req("POST", "/metrics", ["Content-Length: 5", "Transfer-Encoding: chunked"],
                             b"0\r\n\r\n" + req("GET", "/metrics")), grace=0.8)
    v.add("smuggle", refused_with(res, {400, 404, 405, 501}), summary(res))
    res = raw_http(port, req("GET", "/metrics", ["X-Big: " + "a" * (1 << 20)]))
    v.add("1 MiB header", refused_with(res, {400, 413, 431}, allow_drop=True), summary(res))
    res = raw_http(port, req("GET", "/metrics", [f"X-{i}: v" for i in range(20000)]))
    v.add("20000 headers", refused_with(res, {400, 413, 431}, allow_drop=True), summary(res))
    socks, _, _ = open_many(port, 100)
    try:
        t = time.monotonic()
        status, _, data = p.http("GET", "/metrics", port=port)
        v.add("GET beside 100 idle", status == 200 and time.monotonic() - t < 3,
              f"{status} in {time.monotonic() - t:.1f}s")
    finally:
        for s in socks:
            s.close()
    return v.result()


@case("metrics", "metrics_label_injection",
      "inferences (gRPC and HTTP) on model names built to break the Prometheus text format: "
      "'mlp\"} 1\\nattack_injected_metric 1\\n#', 'a\\\\', 'x\\n', then GET /metrics",
      "the inferences refused (NOT_FOUND / 404 / 400); /metrics still 200 and every sample line "
      "well-formed; no line 'attack_injected_metric'")
def _(p):
    v = Variants()
    evil = ['mlp"} 1\nattack_injected_metric 1\n#', "a\\", "x\n", 'mlp",model="y']
    for name in evil:
        r = _good_req()
        r.model_name = name
        code, details, _ = p.grpc_infer(r)
        v.add(f"grpc {name[:10]!r}", code in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT),
              code.name)
        from urllib.parse import quote
        status, _, _ = p.http("POST", f"/v2/models/{quote(name, safe='')}/infer", json.dumps(json_infer(_x1())))
        v.add(f"http {name[:10]!r}", status in (400, 404), str(status))
    status, _, data = p.http("GET", "/metrics", port=p.metrics_port)
    text = data.decode("utf-8", "replace")
    bad = [line for line in text.splitlines() if line and not line.startswith("#") and not PROM_LINE.match(line)]
    injected = [line for line in text.splitlines() if line.startswith("attack_injected_metric")]
    v.add("metrics", status == 200 and not bad and not injected,
          f"{status}; {len(text.splitlines())} lines, malformed {bad[:2]}, injected {injected[:1]}")
    return v.result()


@case("grpc", "log_and_trace_file_write",
      "gRPC LogSettings with log_file '<tmp>/pwn.log' and log_verbose_level 2^32-1; TraceSetting "
      "with trace_file '<tmp>/pwn.trace' (the pattern of Triton's CVE-2024-0087/0088: a client "
      "choosing a file the server writes); HTTP POST /v2/logging and /v2/trace/setting the same",
      "refused (UNIMPLEMENTED / INVALID_ARGUMENT / PERMISSION_DENIED; HTTP 4xx) and no file created")
def _(p):
    v = Variants()
    log_path, trace_path = os.path.join(p.tmp, "pwn.log"), os.path.join(p.tmp, "pwn.trace")
    refused = (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INVALID_ARGUMENT,
               grpc.StatusCode.PERMISSION_DENIED)
    r = pb.LogSettingsRequest()
    r.settings["log_file"].string_param = log_path
    r.settings["log_verbose_level"].uint32_param = (1 << 32) - 1
    code, details, _ = p.grpc_call("LogSettings", r)
    v.add("LogSettings", code in refused, f"{code.name} {details[:60]!r}")
    r = pb.TraceSettingRequest()
    r.settings["trace_file"].value.append(trace_path)
    r.settings["trace_level"].value.append("TIMESTAMPS")
    r.settings["trace_rate"].value.append("1")
    code, details, _ = p.grpc_call("TraceSetting", r)
    v.add("TraceSetting", code in refused, f"{code.name} {details[:60]!r}")
    for path, body in (("/v2/logging", {"log_file": log_path}),
                       ("/v2/trace/setting", {"trace_file": trace_path, "trace_level": ["TIMESTAMPS"]})):
        status, _, data = p.http("POST", path, json.dumps(body))
        v.add(f"http {path}", is4xx(status) or status == 501, f"{status} {data[:60]!r}")
    p.grpc_infer(_good_req())
    written = [f for f in (log_path, trace_path) if os.path.exists(f)]
    v.add("no file", not written, f"created: {written}")
    return v.result()


# ---- restricted APIs (a second server) -----------------------------------------------------


@case("restricted", "restricted_api_bypass",
      "a second server with --http-restricted-api model-repository,shared-memory:attack-key=s3cret "
      "and --grpc-restricted-protocol model-repository:attack-key=s3cret; unload mlp without the "
      "key through path variants (//v2/..., /v2/./repository, trailing slash, %72epository, "
      "query string, absolute-URI, /V2, %2f-joined), with the key 'S3CRET', 's3cr', '', 's3cret\\0x', "
      "over gRPC without the key and with wrong ones; then the index with the right key",
      "every keyless or wrong-key call refused (403 / PERMISSION_DENIED, or 400/404 for paths that "
      "do not route) and mlp still loaded; with the right key the index answers 200")
def _(p):
    v = Variants()
    flags = ["--model-control-mode", "explicit", "--load-model", "mlp",
             "--http-restricted-api", "model-repository,shared-memory:attack-key=s3cret",
             "--grpc-restricted-protocol", "model-repository:attack-key=s3cret"]
    server = gp.ServerProcess(p.args.server, p.repository, flags)
    server.command[server.command.index("--device") + 1] = p.args.device
    server.start()
    try:
        port = server.http_port
        paths = ["//v2/repository/models/mlp/unload", "/v2/./repository/models/mlp/unload",
                 "/v2/repository/models/mlp/unload/", "/v2/%72epository/models/mlp/unload",
                 "/v2/repository/models/mlp/unload?x=1", f"http://127.0.0.1:{port}/v2/repository/models/mlp/unload",
                 "/V2/REPOSITORY/MODELS/mlp/UNLOAD", "/v2/repository/models/mlp/../mlp/unload",
                 "/v2/repository//models/mlp/unload", "/v2/repository/models/mlp%2funload"]
        for path in paths:
            res = raw_http(port, req("POST", path, ["Content-Length: 0"]), timeout=20)
            v.add(path[:45], refused_with(res, {400, 403, 404, 405}), summary(res))
        for label, hdrs in (("case", ["attack-key: S3CRET"]), ("prefix", ["attack-key: s3cr"]),
                            ("empty", ["attack-key:"])):
            res = raw_http(port, req("POST", "/v2/repository/models/mlp/unload", hdrs + ["Content-Length: 0"]),
                           timeout=20)
            v.add(f"key {label}", refused_with(res, {400, 403}), summary(res))
        res = raw_http(port, req("POST", "/v2/systemsharedmemory/region/a/register", ["Content-Length: 2"], b"{}"))
        v.add("shm without key", refused_with(res, {403}), summary(res))
        channel = grpc.insecure_channel(server.url)
        stub = pbg.GRPCInferenceServiceStub(channel)
        for label, md in (("no key", None), ("wrong key", [("triton-grpc-protocol-attack-key", "nope")]),
                          ("prefix", [("triton-grpc-protocol-attack-key", "s3cr")]),
                          ("case", [("triton-grpc-protocol-attack-key", "S3CRET")])):
            try:
                stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="mlp"), timeout=20, metadata=md)
                code = grpc.StatusCode.OK
            except grpc.RpcError as e:
                code = e.code()
            v.add(f"grpc {label}", code == grpc.StatusCode.PERMISSION_DENIED, code.name)
        channel.close()
        status = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        status.request("GET", "/v2/models/mlp/ready")
        ready = status.getresponse().status
        status.close()
        v.add("mlp still loaded", ready == 200, str(ready))
        # Last, as it unloads mlp where the server compares only up to a NUL (needs the secret).
        res = raw_http(port, req("POST", "/v2/repository/models/mlp/unload",
                                 ["attack-key: s3cret\x00x", "Content-Length: 0"]), timeout=20)
        v.add("key 's3cret\\0x' (NUL, RFC 9110 5.5)", refused_with(res, {400, 403}), summary(res))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("POST", "/v2/repository/index", body=b"{}", headers={"attack-key": "s3cret"})
        code = conn.getresponse().status
        conn.close()
        v.add("right key", code == 200, str(code))
    finally:
        server.process.kill()
        server.process.wait(timeout=10)
    return v.result()


# --------------------------------------------------------------------------
# The run


def run_case(probe, entry):
    """(passed, observed) of one case, run in a thread so that a wedged one
    cannot stall the run."""
    box = {}

    def target():
        try:
            box["result"] = entry["fn"](probe)
        except Exception as e:  # noqa: BLE001: a client error is the case's outcome
            box["result"] = (False, f"probe raised {type(e).__name__}: {e}\n{traceback.format_exc()[-600:]}")
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=CASE_TIMEOUT)
    if thread.is_alive():
        return False, f"case did not finish within {CASE_TIMEOUT:.0f} s (wedged server or client)"
    return box["result"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--make-repository", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", default="", help="run the cases whose names contain this")
    parser.add_argument("--time-budget", type=float, default=TIME_BUDGET,
                        help="seconds for the whole run; cases left when it is spent are not run")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    probe = Probe(args)
    startup_s = time.monotonic() - started
    print(f"attack_probe: graphserve on {args.device}, gRPC {probe.grpc_port}, HTTP {probe.http_port}, "
          f"metrics {probe.metrics_port}; reference: {probe.reference_kind}; startup {startup_s:.1f}s",
          flush=True)
    ok, text = probe.health()
    records = []
    if not ok:
        print(f"attack_probe: server unhealthy before any attack: {text}")
    entries = [e for e in CASES if args.only in e["name"]]
    for entry in entries:
        t = time.monotonic()
        if t - started > args.time_budget - 5:
            records.append({k: entry[k] for k in ("group", "name", "sent", "expected")} |
                           {"observed": "not run: the time budget was spent", "passed": False,
                            "health": "", "restarted": False, "seconds": 0})
            continue
        passed, observed = run_case(probe, entry)
        healthy, health_text = probe.health()
        restarted = False
        if not healthy and probe.server.process.poll() is None:
            # Alive but a model gone (a case that unloaded it): reload before restarting.
            try:
                probe.load("mlp")
                probe.load("dlrm_dense")
            except OSError:
                pass
            repaired, _ = probe.health()
            if repaired:
                passed = False
                health_text += "; repaired by reloading mlp and dlrm_dense"
                healthy = True
        if not healthy:
            passed = False
            log_tail = "\n".join(probe.server.output().splitlines()[-15:])
            health_text += f"\n--- server output tail ---\n{log_tail}"
            try:
                probe.restart()
                restarted = True
            except RuntimeError as e:
                health_text += f"\nrestart failed: {e}"
        record = {k: entry[k] for k in ("group", "name", "sent", "expected")}
        record.update(observed=observed, passed=bool(passed), health=health_text,
                      restarted=restarted, seconds=round(time.monotonic() - t, 2))
        records.append(record)
        print(f"{'PASS' if passed else 'FAIL'} {entry['name']:<38} {record['seconds']:6.2f}s"
              + ("" if passed else f"\n     observed: {observed[:1500]}\n     health: {health_text[:800]}"),
              flush=True)
    alive, final_health = probe.health()
    output = probe.server.output()
    probe.server.terminate()
    exit_code = probe.server.wait(timeout=15)
    if exit_code is None:
        probe.kill_server()
    elapsed = time.monotonic() - started
    failed = [r for r in records if not r["passed"]]
    report = {
        "command": sys.argv, "device": args.device, "reference": probe.reference_kind,
        "seconds": round(elapsed, 1), "startup_seconds": round(startup_s, 1),
        "cases": len(records), "passed": len(records) - len(failed), "failed": len(failed),
        "restarts": probe.restarts, "alive_at_end": alive, "final_health": final_health,
        "exit_code_after_sigterm": exit_code,
        "results": records, "server_output_tail": output.splitlines()[-40:],
    }
    import shutil
    shutil.rmtree(probe.tmp, ignore_errors=True)
    shutil.rmtree(os.path.dirname(probe.repository), ignore_errors=True)
    path = os.path.join(args.out, "attack_probe.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"\nattack_probe: {len(records)} cases, {len(records) - len(failed)} passed, {len(failed)} failed, "
          f"{probe.restarts} restarts, alive at end: {alive}, {elapsed:.1f}s; report {path}")
    for r in failed:
        parts = r["observed"].split(" | ")
        shown = " | ".join(x for x in parts if not x.startswith("ok ")) if len(parts) > 1 else r["observed"]
        print(f"  FAILED {r['name']}: {shown[:400]}")
    sys.exit(0 if not failed and alive else 1)


if __name__ == "__main__":
    main()
