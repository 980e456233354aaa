#!/usr/bin/env bash
# Set up (if needed), then materialise every asset offline on the demo-sized cut of the bundled sample
# (mama_pipeline/demo_config.yaml) with the embedded model, in one process, ending with a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/mama-pipeline demo
