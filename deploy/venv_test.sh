#!/usr/bin/env bash
# Runs a test with a tool of the virtual environment that deploy/setup.sh
# builds at <repo>/.pyenv (deploy/python_requirements.txt pins everything):
# deploy/BUILD's checks (hadolint, yamllint, check-jsonschema,
# kubernetes-validate) and tests/BUILD's Python compatibility tests
# (tritonclient, grpcio-reflection, onnxruntime, perf_analyzer).
#
#   venv_test.sh python SCRIPT.py ARG...    the venv's interpreter
#   venv_test.sh TOOL ARG...                a command of the venv's bin/
#
# GRAPHSERVE_PYTHON names that interpreter. deploy/test.sh passes it; by hand:
#
#   bazel test //deploy/... --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
#
# When it is unset or not executable the check FAILS, saying this: a lint that
# passes without running would hide exactly what it exists to catch, and
# `bazel test //...` cannot tell a skip from a pass.
set -euo pipefail

if [[ -z "${GRAPHSERVE_PYTHON:-}" ]]; then
  echo "GRAPHSERVE_PYTHON is not set: run ./deploy/test.sh, or pass" >&2
  echo "  --test_env=GRAPHSERVE_PYTHON=\$PWD/.pyenv/bin/python" >&2
  echo "to bazel test after ./deploy/setup.sh has built the venv." >&2
  exit 1
fi
if [[ ! -x "$GRAPHSERVE_PYTHON" ]]; then
  echo "GRAPHSERVE_PYTHON=$GRAPHSERVE_PYTHON is not an executable; run ./deploy/setup.sh" >&2
  echo "(it builds the venv at <repo>/.pyenv) and pass its bin/python." >&2
  exit 1
fi

# Nothing may write .pyc files next to the sources the runfiles link to.
export PYTHONDONTWRITEBYTECODE=1
tool="$1"
shift
if [[ "$tool" == python ]]; then
  exec "$GRAPHSERVE_PYTHON" -u "$@"
fi
command="$(dirname "$GRAPHSERVE_PYTHON")/$tool"
if [[ ! -x "$command" ]]; then
  echo "$command is missing: run ./deploy/setup.sh, which installs" >&2
  echo "deploy/python_requirements.txt into the venv." >&2
  exit 1
fi
exec "$command" "$@"
