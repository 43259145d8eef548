#!/usr/bin/env bash
# Installs cuDNN's C++ frontend headers (header-only; runtime/cuda/cudnn_conv.cc
# builds its convolutions with its graph API) into <repo>/.deps/cudnn_frontend,
# which the WORKSPACE's @cudnn_frontend names. NVIDIA ships them only in the
# nvidia-cudnn-frontend wheel; PYTHON's pip downloads it (no install).
# Pinned, like the venv's packages. Idempotent. deploy/setup.sh and the
# Dockerfile's builder run it.
#
#   deploy/cudnn_frontend.sh [PYTHON]     (default python3)
set -euo pipefail
python="${1:-python3}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"

CUDNN_FRONTEND_VERSION="1.32.0"
frontend="$REPO/.deps/cudnn_frontend"
frontend_version_of() {  # the version its cudnn_frontend_version.h says, or nothing
  awk '/define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION /{v = v (v ? "." : "") $3} END {print v}' \
    "$1/include/cudnn_frontend_version.h" 2>/dev/null
}
if [[ "$(frontend_version_of "$frontend")" == "$CUDNN_FRONTEND_VERSION" ]]; then
  echo "setup: cuDNN frontend $CUDNN_FRONTEND_VERSION headers present"
else
  echo "setup: installing cuDNN frontend $CUDNN_FRONTEND_VERSION headers into $frontend"
  wheels=$(mktemp -d)
  "$python" -m pip download --quiet --disable-pip-version-check --no-input \
    --no-deps --only-binary=:all: --dest "$wheels" "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION"
  rm -rf "$frontend" && mkdir -p "$frontend"
  "$python" - "$wheels"/nvidia_cudnn_frontend-*.whl "$frontend" <<'PY'
import sys
import zipfile

wheel, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive:
    headers = [name for name in archive.namelist()
               if name.startswith("include/") and name.endswith((".h", ".hpp"))]
    archive.extractall(target, headers)
PY
  rm -rf "$wheels"
  if [[ "$(frontend_version_of "$frontend")" != "$CUDNN_FRONTEND_VERSION" ]]; then
    echo "setup: the cuDNN frontend wheel held no include/cudnn_frontend_version.h of $CUDNN_FRONTEND_VERSION" >&2
    exit 1
  fi
fi
