#!/usr/bin/env bash
# Label Studio, the annotation server of the clinician validation loop, in its own environment.
#
#   scripts/label_studio.sh install   create .label-studio-venv with the pinned label-studio (idempotent)
#   scripts/label_studio.sh start     install if needed, then run the server in the foreground on loopback
#
# Label Studio pins openai<2 and its SDK pyjwt<2.14, so it cannot share .venv; the pipeline talks to it
# over its REST API. start reads (never logs):
#   LABEL_STUDIO_USERNAME, LABEL_STUDIO_PASSWORD  the seeded admin account (created on first start)
#   LABEL_STUDIO_USER_TOKEN                        its API token (the pipeline's clinician.token_env)
# and optionally LABEL_STUDIO_PORT (8080), LABEL_STUDIO_DATA_DIR (<MAMA_DATA_DIR or data>/label_studio).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
VENV=.label-studio-venv
REQS=config/label-studio-requirements.txt

install() {
  local stamp
  stamp=$(sha256sum "$REQS" | cut -c1-16)
  if [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$stamp" ]; then
    return 0
  fi
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet -r "$REQS"
  echo "$stamp" > "$VENV/.installed"
}

start() {
  install
  : "${LABEL_STUDIO_USERNAME:?set LABEL_STUDIO_USERNAME (admin e-mail)}"
  : "${LABEL_STUDIO_PASSWORD:?set LABEL_STUDIO_PASSWORD}"
  : "${LABEL_STUDIO_USER_TOKEN:?set LABEL_STUDIO_USER_TOKEN (the API token the pipeline uses)}"
  local data_dir=${LABEL_STUDIO_DATA_DIR:-${MAMA_DATA_DIR:-data}/label_studio}
  mkdir -p "$data_dir"
  export LABEL_STUDIO_USERNAME LABEL_STUDIO_PASSWORD LABEL_STUDIO_USER_TOKEN
  # everything under the data dir; no sign-up page, no analytics, no version look-up on pypi.org
  export LABEL_STUDIO_BASE_DATA_DIR="$data_dir" LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true
  export COLLECT_ANALYTICS=false LATEST_VERSION_CHECK=false
  # credentials travel in the environment, not on the command line (where ps would show them)
  exec "$VENV/bin/label-studio" start --no-browser --internal-host 127.0.0.1 --port "${LABEL_STUDIO_PORT:-8080}" \
    --data-dir "$data_dir" --enable-legacy-api-token --log-level WARNING
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  *) echo "usage: $0 install|start" >&2; exit 2 ;;
esac
