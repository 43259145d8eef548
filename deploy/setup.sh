#!/usr/bin/env bash
# Installs every Debian package GraphServe's build and tests need. Idempotent:
# when everything is present it only checks and returns within seconds.
#
# The CUDA 13 toolkit (nvcc, cuBLAS/cuBLASLt, cuDNN) is not a Debian package;
# it is expected at $CUDA_PATH (default /usr/local/cuda). The build compiles
# CUDA code with it even on machines without a GPU.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap        # Bazel 4.2.3, run offline in WORKSPACE mode
  g++
  libabsl-dev
  libfmt-dev
  libgmock-dev
  libgrpc++-dev
  libgtest-dev
  libonnx-dev            # ONNX import: protobuf schema, checker, shape inference
  libonnx-testdata       # ONNX's node tests: the conformance suite's data
  libprotobuf-dev
  libspdlog-dev
  prometheus-cpp-dev
  protobuf-compiler
  protobuf-compiler-grpc
  python3
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
