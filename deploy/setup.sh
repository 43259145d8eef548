#!/usr/bin/env bash
# Installs every Debian package GraphServe's build and tests need, and the
# Python virtual environment of the compatibility tests at <repo>/.pyenv
# (pinned in deploy/python_requirements.txt, plus Triton's perf_analyzer).
# Idempotent: when everything is present it only checks and returns within
# seconds.
#
# The CUDA 13 toolkit (nvcc, cuBLAS/cuBLASLt, cuDNN) is not a Debian package;
# it is expected at $CUDA_PATH (default /usr/local/cuda). The build compiles
# CUDA code with it even on machines without a GPU.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap        # Bazel 4.2.3, run offline in WORKSPACE mode
  clang                  # --config=asan_ubsan, tsan, asan, ubsan and fuzz (.bazelrc)
  curl                   # the HTTP/REST endpoint's compatibility test
  g++
  google-perftools       # libprofiler, the CPU profiler bench/gpu_bundle.sh packs
  libabsl-dev
  libclang-rt-14-dev     # clang's sanitizer and libFuzzer runtimes
  libcpp-httplib-dev     # the HTTP/REST endpoint
  libb64-0d              # perf_analyzer (tritonclient 2.51.0's build) links it
  libfmt-dev
  libgmock-dev
  libgrpc++-dev
  libgtest-dev
  libonnx-dev            # ONNX import: protobuf schema, checker, shape inference
  libonnx-testdata       # ONNX's node tests: the conformance suite's data
  libprotobuf-dev
  libspdlog-dev
  nlohmann-json3-dev     # the HTTP/REST endpoint's JSON
  openssl                # the gRPC TLS test makes its CA and certificates with it
  prometheus-cpp-dev
  protobuf-compiler
  protobuf-compiler-grpc
  python3
  python3-venv           # the compatibility tests' venv (below)
)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
fi

# The compatibility tests' Python (deploy/venv_test.sh), on Debian's
# interpreter rather than whichever python3 comes first on PATH.
REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$REPO/.pyenv"
REQUIREMENTS="$REPO/deploy/python_requirements.txt"
# perf_analyzer ships only inside tritonclient's manylinux wheels (the index's
# perf-analyzer 0.1.0 is a placeholder that prints "hello"). 2.51.0's is the
# newest that runs on Debian 12: 2.52.0 to 2.60.0 need glibc 2.38, and the
# wheels from 2.61.0 on carry none.
PERF_ANALYZER_VERSION="2.51.0"

if ! "$VENV/bin/python" -c "" 2>/dev/null; then
  echo "setup: creating the Python venv at $VENV"
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
fi

# Prints the pins the venv does not satisfy; fails when there are any.
check_pins() {
  "$VENV/bin/python" - "$REQUIREMENTS" <<'PY'
import re
import sys
from importlib.metadata import PackageNotFoundError, version

wrong = []
for line in open(sys.argv[1]):
    requirement = line.split("#")[0].strip()
    if not requirement:
        continue
    name, pinned = requirement.split("==")
    name = re.sub(r"\[.*\]", "", name)  # the extra, as in tritonclient[grpc]
    try:
        installed = version(name)
    except PackageNotFoundError:
        installed = "missing"
    if installed != pinned:
        wrong.append(f"{name} {installed} (pinned {pinned})")
print(", ".join(wrong))
sys.exit(1 if wrong else 0)
PY
}

if wrong=$(check_pins); then
  echo "setup: Python venv at $VENV has every pinned package"
else
  echo "setup: installing into $VENV: $wrong"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -r "$REQUIREMENTS"
  check_pins >/dev/null
fi

# perf_analyzer prints its version on stderr.
version=$("$VENV/bin/perf_analyzer" --version 2>&1 || true)
if [[ $version == *"Version $PERF_ANALYZER_VERSION "* ]]; then
  echo "setup: perf_analyzer $PERF_ANALYZER_VERSION present"
else
  echo "setup: installing perf_analyzer $PERF_ANALYZER_VERSION from tritonclient's wheel"
  wheels=$(mktemp -d)
  "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-input \
    --no-deps --only-binary=:all: --dest "$wheels" "tritonclient==$PERF_ANALYZER_VERSION"
  mkdir -p "$VENV/libexec"
  "$VENV/bin/python" - "$wheels"/tritonclient-*.whl "$VENV/libexec/perf_analyzer" <<'PY'
import shutil
import sys
import zipfile

wheel, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive:
    member = next(name for name in archive.namelist()
                  if name.endswith(".data/data/bin/perf_analyzer"))
    with archive.open(member) as source, open(target, "wb") as out:
        shutil.copyfileobj(source, out)
PY
  rm -rf "$wheels"
  chmod +x "$VENV/libexec/perf_analyzer"
  purelib=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cat >"$VENV/bin/perf_analyzer" <<SH
#!/bin/sh
# Written by deploy/setup.sh: Triton's perf_analyzer $PERF_ANALYZER_VERSION, which links
# libcudart.so.12, found in the venv.
LD_LIBRARY_PATH="$purelib/nvidia/cuda_runtime/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  exec "$VENV/libexec/perf_analyzer" "\$@"
SH
  chmod +x "$VENV/bin/perf_analyzer"
  if ! version=$("$VENV/bin/perf_analyzer" --version 2>&1); then
    echo "setup: perf_analyzer does not run: $version" >&2
    exit 1
  fi
  echo "setup: $version"
fi

# cuDNN's C++ frontend headers, from NVIDIA's wheel through the venv's pip.
"$REPO/deploy/cudnn_frontend.sh" "$VENV/bin/python"

CUDA_PATH="${CUDA_PATH:-/usr/local/cuda}"
problems=()
[[ -x "$CUDA_PATH/bin/nvcc" ]] || problems+=("nvcc ($CUDA_PATH/bin/nvcc)")
[[ -f "$CUDA_PATH/include/cublasLt.h" ]] || problems+=("cuBLASLt headers ($CUDA_PATH/include/cublasLt.h)")
ls "$CUDA_PATH"/lib64/libcublasLt.so* >/dev/null 2>&1 || problems+=("cuBLASLt library ($CUDA_PATH/lib64/libcublasLt.so)")
ls "$CUDA_PATH"/lib64/libcudart.so* >/dev/null 2>&1 || problems+=("CUDA runtime ($CUDA_PATH/lib64/libcudart.so)")
if ((${#problems[@]} > 0)); then
  echo "setup: the CUDA 13 toolkit is incomplete or missing at CUDA_PATH=$CUDA_PATH:" >&2
  printf '  missing: %s\n' "${problems[@]}" >&2
  echo "setup: install NVIDIA's CUDA 13 toolkit (with cuBLAS) there, or set CUDA_PATH to its location." >&2
  exit 1
fi
echo "setup: CUDA toolkit at $CUDA_PATH: $("$CUDA_PATH/bin/nvcc" --version | tail -n 2 | head -n 1)"
