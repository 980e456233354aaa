#!/usr/bin/env bash
# A dask.distributed cluster on this machine for the dask executor (docs/scale-out.md):
#   scripts/dask_cluster.sh start DIR [WORKERS]  scheduler on a free loopback port and WORKERS (default 2)
#                                                 worker processes, one step at a time each; writes
#                                                 DIR/run-config.yaml (the run config naming the scheduler)
#                                                 and DIR/worker_pids, DIR/scheduler_pid
#   scripts/dask_cluster.sh stop DIR             stops what start started (its recorded pids only)
# Workers import the project's definitions: start them with the MAMA_CONFIG, MAMA_DATA_DIR and
# code of the runs they will take (the environment of this script).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:?start|stop}
dir=${2:?cluster folder}
py=${PYTHON:-$PWD/.venv/bin/python}
case "$cmd" in
  start)
    workers=${3:-2}
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$py" -m distributed.cli.dask_scheduler --host 127.0.0.1 --port "$port" --no-dashboard \
      --scheduler-file "$dir/scheduler.json" >"$dir/scheduler.log" 2>&1 &
    echo $! >"$dir/scheduler_pid"
    : >"$dir/worker_pids"
    for i in $(seq 1 "$workers"); do
      # no nanny: a killed worker stays down and the scheduler gives its task to another worker
      "$py" -m distributed.cli.dask_worker "tcp://127.0.0.1:$port" --name "worker-$i" --nthreads 1 \
        --no-nanny --no-dashboard --local-directory "$dir/worker-$i" >"$dir/worker-$i.log" 2>&1 &
      echo $! >>"$dir/worker_pids"
    done
    "$py" - "$dir" "$workers" <<'PY'
import sys, time
from dask.distributed import Client
folder, workers = sys.argv[1], int(sys.argv[2])
with Client(scheduler_file=f"{folder}/scheduler.json", timeout=120) as client:
    client.wait_for_workers(workers, timeout=300)
    address = client.scheduler.address
with open(f"{folder}/run-config.yaml", "w") as fh:
    fh.write(f"execution:\n  config:\n    cluster:\n      existing:\n        address: {address}\n")
print(f"dask scheduler {address}, {workers} workers; run config {folder}/run-config.yaml")
PY
    ;;
  stop)
    for f in "$dir/worker_pids" "$dir/scheduler_pid"; do
      [ -f "$f" ] || continue
      while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$f"
      while read -r pid; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
      done <"$f"
      rm -f "$f"
    done
    ;;
  *) echo "usage: scripts/dask_cluster.sh start|stop DIR [WORKERS]" >&2; exit 2 ;;
esac
