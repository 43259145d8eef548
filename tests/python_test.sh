#!/usr/bin/env bash
# Runs one Python compatibility test (tests/BUILD: the sh_test targets whose
# clients nobody on the team wrote) with the interpreter of the virtual
# environment that deploy/setup.sh builds at <repo>/.pyenv, where tritonclient,
# grpcio-reflection, onnxruntime and perf_analyzer are pinned.
#
#   python_test.sh SCRIPT.py --server PATH --make-repository PATH
#
# GRAPHSERVE_PYTHON names that interpreter. deploy/test.sh passes it; by hand:
#
#   bazel test //tests:tritonclient_compat_test \
#       --test_env=GRAPHSERVE_PYTHON=$PWD/.pyenv/bin/python
#
# When it is unset or not executable the test FAILS, saying this: a
# compatibility test that passes without running would hide exactly the
# breakage it exists to catch, and `bazel test //...` cannot tell a skip from
# a pass.
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
exec "$GRAPHSERVE_PYTHON" -u "$@"
