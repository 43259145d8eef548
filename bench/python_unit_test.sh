#!/usr/bin/env bash
# Runs one of bench/'s Python unit tests (standard library and unittest only)
# with Debian's python3.
set -euo pipefail
exec /usr/bin/python3 "$1"
