#!/usr/bin/env bash
# Set up (if needed) and run the test suite, or the tests named in the arguments (a folder, a file, -k ...).
# The tests run in one worker per core (pytest-xdist; -n 0 after them runs them in this process): the servers,
# runs and browsers the tests start keep both cores of a 2-core machine busy (96% of a whole run, from /proc/stat),
# and a third worker only added contention (742 s with three, 734 s with two). --dist loadgroup
# keeps the tests marked with one xdist_group on one worker: those share a build made once per run (conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/label_studio.sh install  # the clinician loop's tests run a real Label Studio server
if ! command -v chromium >/dev/null 2>&1; then  # headless browser for the Dagster UI test
  if command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || [ -n "${CHROMIUM:-}" ]; then
    :  # another Chromium build the UI test finds
  elif [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is not installed and this user cannot apt-get it; the UI test will fail" >&2
  fi
fi
if ! command -v pdflatex >/dev/null 2>&1 || ! kpsewhich booktabs.sty >/dev/null 2>&1; then  # exported LaTeX tables
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq texlive-latex-recommended >/dev/null
  else
    echo "pdflatex with booktabs is not installed and this user cannot apt-get it; the LaTeX export test will fail" >&2
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# the cores, counted before the export below: GNU nproc answers OMP_NUM_THREADS (or OMP_THREAD_LIMIT) where set
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
# One BLAS/OpenMP thread per process (torch, numpy; the servers and dask workers tests start inherit it): the
# workers already fill the cores, and on a busy 2-core machine a torch process with two threads ran small
# matrix products 5-13x slower than with one (its threads wait for each other while the other is descheduled).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# Python's bytecode caches (__pycache__: compiled modules and pytest's rewritten test modules) are written even
# where the environment turns them off: without them each worker compiles every test module again to collect
# (9.1 -> 4.8 s CPU a worker, pytest --collect-only) and every process a test starts, the project's modules.
unset PYTHONDONTWRITEBYTECODE
# the tests choose their own configuration and data folders: a developer's exported ones must not leak in
unset MAMA_CONFIG MAMA_DATA_DIR
exec .venv/bin/pytest -q -n "$cores" --dist loadgroup "$@"
