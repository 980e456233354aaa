#!/usr/bin/env bash
# Label Studio, the annotation server of the clinician validation loop, in its own environment.
#
#   scripts/label_studio.sh install         create .label-studio-venv with the pinned label-studio (idempotent)
#   scripts/label_studio.sh start           install if needed, then run the server in the foreground on loopback
#   scripts/label_studio.sh stop            stop the server running on LABEL_STUDIO_DATA_DIR and wait until it exits
#   scripts/label_studio.sh add-user EMAIL  add an annotator account (sign-up stays disabled); its first password
#                                           comes from LABEL_STUDIO_NEW_USER_PASSWORD
#
# Label Studio pins openai<2 and its SDK pyjwt<2.14, so it cannot share .venv; the pipeline talks to it
# over its REST API. start reads (never logs):
#   LABEL_STUDIO_USERNAME, LABEL_STUDIO_PASSWORD  the seeded admin account (created on first start)
#   LABEL_STUDIO_USER_TOKEN                        its API token (the pipeline's clinician.token_env)
# and optionally LABEL_STUDIO_PORT (8080). Every command works on LABEL_STUDIO_DATA_DIR
# (<MAMA_DATA_DIR or data>/label_studio): the database, the server's pid file and its secret key.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
VENV=.label-studio-venv
REQS=config/label-studio-requirements.txt
DATA_DIR=${LABEL_STUDIO_DATA_DIR:-${MAMA_DATA_DIR:-data}/label_studio}
PID_FILE=$DATA_DIR/label_studio.pid

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

no_outbound() {
  # Everything under the data dir; no sign-up page. Nothing leaves the machine: no error reports to Sentry
  # (backend and browser; the LABEL_STUDIO_ names win over any SENTRY_DSN already set), no analytics, no version
  # look-up on pypi.org.
  export LABEL_STUDIO_BASE_DATA_DIR="$DATA_DIR" LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true
  export LABEL_STUDIO_SENTRY_DSN= SENTRY_DSN= LABEL_STUDIO_FRONTEND_SENTRY_DSN= FRONTEND_SENTRY_DSN=
  export LABEL_STUDIO_COLLECT_ANALYTICS=false COLLECT_ANALYTICS=false
  export LABEL_STUDIO_LATEST_VERSION_CHECK=false LATEST_VERSION_CHECK=false
  # Label Studio asks git for its own version from inside its package and, finding this checkout's repository
  # above .label-studio-venv, rewrites its version_.py with this project's commit: git stops at the venv.
  unset GIT_DIR GIT_WORK_TREE
  GIT_CEILING_DIRECTORIES=$(realpath "$VENV")
  export GIT_CEILING_DIRECTORIES
}

start() {
  install
  : "${LABEL_STUDIO_USERNAME:?set LABEL_STUDIO_USERNAME (admin e-mail)}"
  : "${LABEL_STUDIO_PASSWORD:?set LABEL_STUDIO_PASSWORD}"
  : "${LABEL_STUDIO_USER_TOKEN:?set LABEL_STUDIO_USER_TOKEN (the API token the pipeline uses)}"
  mkdir -p "$DATA_DIR"
  export LABEL_STUDIO_USERNAME LABEL_STUDIO_PASSWORD LABEL_STUDIO_USER_TOKEN
  no_outbound
  echo $$ > "$PID_FILE"  # exec keeps the pid: this is the server's
  # credentials travel in the environment, not on the command line (where ps would show them)
  exec "$VENV/bin/label-studio" start --no-browser --internal-host 127.0.0.1 --port "${LABEL_STUDIO_PORT:-8080}" \
    --data-dir "$DATA_DIR" --enable-legacy-api-token --log-level WARNING
}

running() {  # the pid is a live Label Studio (an exited one, even if not yet reaped, has no command line)
  [ -n "$1" ] && grep -qs label-studio "/proc/$1/cmdline"
}

stop() {
  local pid
  pid=$(cat "$PID_FILE" 2>/dev/null || true)
  if ! running "$pid"; then
    echo "no Label Studio is running on $DATA_DIR"
    rm -f "$PID_FILE"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 300); do
    running "$pid" || { rm -f "$PID_FILE"; echo "Label Studio (pid $pid) stopped"; return 0; }
    sleep 0.1
  done
  echo "Label Studio (pid $pid) did not stop within 30 s" >&2
  return 1
}

add_user() {
  local email=${1:?usage: $0 add-user EMAIL}
  : "${LABEL_STUDIO_NEW_USER_PASSWORD:?set LABEL_STUDIO_NEW_USER_PASSWORD (first password of the new account)}"
  install
  no_outbound
  "$VENV/bin/python" scripts/label_studio_add_user.py "$email"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  add-user) shift; add_user "$@" ;;
  *) echo "usage: $0 install|start|stop|add-user EMAIL" >&2; exit 2 ;;
esac
