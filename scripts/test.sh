#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/label_studio.sh install  # the clinician loop's tests run a real Label Studio server
if ! command -v chromium >/dev/null 2>&1; then  # headless browser for the Dagster UI test
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is not installed and this user cannot apt-get it; the UI test will fail" >&2
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/pytest -q "$@"
