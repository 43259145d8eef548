"""gRPC over TLS with Triton's flags, against the real binary on the host
executor, with Triton's Python client:

  - --grpc-use-ssl: tritonclient.grpc with ssl=True and the test CA's root
    certificate gets ServerLive and an mlp inference checked against
    onnxruntime; a plaintext client is refused;
  - --grpc-use-ssl-mutual: a client presenting a certificate the CA signed is
    served; one without a certificate, one whose certificate another CA
    signed, and a plaintext one are refused;
  - a certificate file that cannot be read, or that gRPC's TLS stack
    refuses, is refused before any model loads, naming the flag and the file.

The CA, server and client certificates are made here with the openssl
command line (deploy/setup.sh installs it).

    bazel test //tests:grpc_tls_test \\
        --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python

A failing assertion whose message starts with "SERVER:" means graphserve
behaved differently from what the message says it should.
"""

import os
import subprocess
import sys
import unittest

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

import graphserve_process as gp

# A refused handshake fails at once; the margin covers a loaded machine.
CALL_TIMEOUT_S = 20
REFUSAL_TIMEOUT_S = 30

SERVER_BINARY = MAKE_REPOSITORY = None
_repository = None
_pki = None


def openssl(*args, cwd):
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{done.stderr}")


def make_ca(directory, name):
    """A self-signed CA: (certificate, key) paths."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.crt",
            cwd=directory)
    return os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")


def make_signed(directory, name, ca, extensions):
    """A key and a certificate `ca` signs: (certificate, key) paths."""
    with open(os.path.join(directory, f"{name}.ext"), "w") as ext:
        ext.write(extensions + "\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=directory)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca[0], "-CAkey", ca[1],
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt",
            cwd=directory)
    return os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")


def setUpModule():
    global _repository, _pki
    _repository = gp.make_demo_repository(MAKE_REPOSITORY)
    directory = gp.scratch_dir("pki_")
    ca = make_ca(directory, "test-ca")
    other_ca = make_ca(directory, "other-ca")
    _pki = {
        "ca": ca[0],
        # The server's name is what the client dials: 127.0.0.1 and localhost.
        "server": make_signed(directory, "server", ca,
                              "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                              "extendedKeyUsage=serverAuth"),
        "client": make_signed(directory, "client", ca, "extendedKeyUsage=clientAuth"),
        "stranger": make_signed(directory, "stranger", other_ca, "extendedKeyUsage=clientAuth"),
    }


def tls_flags(mutual):
    cert, key = _pki["server"]
    flags = ["--grpc-use-ssl-mutual" if mutual else "--grpc-use-ssl", "true",
             "--grpc-server-cert", cert, "--grpc-server-key", key]
    if mutual:
        flags += ["--grpc-root-cert", _pki["ca"]]
    return flags


class GrpcTlsTest(unittest.TestCase):

    def assert_serves(self, server, what, **tls):
        client = grpcclient.InferenceServerClient(url=server.url, ssl=True,
                                                  root_certificates=_pki["ca"], **tls)
        self.assertTrue(client.is_server_live(client_timeout=CALL_TIMEOUT_S),
                        f"SERVER: ServerLive over TLS, {what}")
        batch = 3
        arrays = gp.random_inputs(gp.DEMO_INPUTS["mlp"], batch, seed=11)
        x = grpcclient.InferInput("x", list(arrays["x"].shape), "FP32")
        x.set_data_from_numpy(arrays["x"])
        result = client.infer("mlp", [x], client_timeout=CALL_TIMEOUT_S)
        want = gp.ReferenceModel(_repository, "mlp").run(arrays)["y"]
        self.assertLess(gp.relative_error(result.as_numpy("y"), want), gp.RELATIVE_TOLERANCE,
                        f"SERVER: ModelInfer mlp over TLS, {what}")
        client.close()

    def assert_refused(self, server, what, **client_options):
        client = grpcclient.InferenceServerClient(url=server.url, **client_options)
        with self.assertRaises(InferenceServerException,
                               msg=f"SERVER: {what} must be refused") as refused:
            client.is_server_live(client_timeout=CALL_TIMEOUT_S)
        client.close()
        # The connection fails (UNAVAILABLE), not a call the server answered.
        self.assertIn("UNAVAILABLE", str(refused.exception.status()), str(refused.exception))

    def test_tls_serves_a_client_that_trusts_the_ca_and_refuses_plaintext(self):
        with gp.ServerProcess(SERVER_BINARY, _repository, tls_flags(mutual=False)) as server:
            self.assertEqual(server.serving_state, "SERVING", server.output())
            self.assertIn(f"graphserve: serving gRPC on 127.0.0.1:{server.port} (SERVING) over TLS",
                          server.output())
            self.assert_serves(server, "server certificate only")
            self.assert_refused(server, "a plaintext client")

    def test_mutual_tls_requires_a_client_certificate_the_ca_signed(self):
        with gp.ServerProcess(SERVER_BINARY, _repository, tls_flags(mutual=True)) as server:
            self.assertIn("over TLS, client certificates required", server.output())
            cert, key = _pki["client"]
            self.assert_serves(server, "client certificate", private_key=key,
                               certificate_chain=cert)
            self.assert_refused(server, "a TLS client without a certificate", ssl=True,
                                root_certificates=_pki["ca"])
            stranger_cert, stranger_key = _pki["stranger"]
            self.assert_refused(server, "a client whose certificate another CA signed", ssl=True,
                                root_certificates=_pki["ca"], private_key=stranger_key,
                                certificate_chain=stranger_cert)
            self.assert_refused(server, "a plaintext client")

    def test_an_unreadable_certificate_is_refused_before_loading(self):
        missing = os.path.join(gp.scratch_dir("nocert_"), "server.crt")
        _, key = _pki["server"]
        command = [SERVER_BINARY, "--model-repository", _repository, "--device", "cpu",
                   "--host", "127.0.0.1", "--grpc-port", "0", "--http-port", "0",
                   "--metrics-port", "0", "--grpc-use-ssl=true", "--grpc-server-cert", missing,
                   "--grpc-server-key", key]
        done = subprocess.run(command, capture_output=True, text=True, timeout=REFUSAL_TIMEOUT_S)
        output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        self.assertEqual(done.returncode, 1, f"SERVER: exit code\n{output}")
        self.assertIn(f"--grpc-server-cert {missing}: cannot read it", done.stderr, output)
        self.assertNotIn("loading model", done.stdout, "SERVER: checked before the models load")
        # Asking for TLS without its files is a usage error.
        done = subprocess.run(command[:-4], capture_output=True, text=True,
                              timeout=REFUSAL_TIMEOUT_S)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key",
                      done.stderr)

    def test_a_certificate_gRPC_cannot_use_is_refused_before_loading(self):
        # PEM framing around bytes that are no certificate: read fine, refused
        # by gRPC's TLS stack, which must happen before the models load.
        garbage = os.path.join(gp.scratch_dir("badcert_"), "server.crt")
        with open(garbage, "w") as out:
            out.write("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
        _, key = _pki["server"]
        command = [SERVER_BINARY, "--model-repository", _repository, "--device", "cpu",
                   "--host", "127.0.0.1", "--grpc-port", "0", "--http-port", "0",
                   "--metrics-port", "0", "--grpc-use-ssl=true", "--grpc-server-cert", garbage,
                   "--grpc-server-key", key]
        done = subprocess.run(command, capture_output=True, text=True, timeout=REFUSAL_TIMEOUT_S)
        output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        self.assertEqual(done.returncode, 1, f"SERVER: exit code\n{output}")
        self.assertIn("gRPC refused them as TLS credentials", done.stderr, output)
        self.assertNotIn("loading model", done.stdout, "SERVER: checked before the models load")


if __name__ == "__main__":
    SERVER_BINARY, MAKE_REPOSITORY, argv = gp.parse_paths(sys.argv)
    unittest.main(argv=argv, verbosity=2)
