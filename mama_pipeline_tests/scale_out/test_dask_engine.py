"""The bundled sample on a real dask.distributed cluster (dagster-dask), run with docs/scale-out.md's commands.

A scheduler and two worker processes are started by scripts/dask_cluster.sh; `mama-pipeline materialize
--executor dask` sends every step to them. The same sample, run in process, must give byte-identical
releases and the same rows in every table of the DuckDB store; every step must have run in a worker.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from mama_pipeline_tests.release.test_corpus_change import write_config

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("mama-pipeline"))
CLUSTER = str(REPO / "scripts" / "dask_cluster.sh")


def tree_hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def table_rows(db: Path) -> dict[str, list[tuple]]:
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'").fetchall()]
        return {t: sorted(con.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in sorted(tables)}


def step_pids(home: Path) -> dict[str, set[int]]:
    """Process ids of every step start recorded on the instance at ``home``, by step key."""
    pids: dict[str, set[int]] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            for rec in instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_START).records:
                entry = rec.event_log_entry
                pids.setdefault(entry.step_key, set()).add(entry.pid)
    return pids


def env_for(tmp_path: Path, config: Path, name: str) -> dict[str, str]:
    return {**os.environ, "MAMA_CONFIG": str(config), "MAMA_DATA_DIR": str(tmp_path / name / "data"),
            "DAGSTER_HOME": str(tmp_path / name / "dagster_home"), "OPENAI_API_KEY": "unused"}


@pytest.mark.slow
def test_sample_on_dask_workers_matches_the_in_process_run(tmp_path, fake_llm):
    config = write_config(tmp_path / "sample", fake_llm.url)
    here = env_for(tmp_path, config, "in_process")
    out = subprocess.run([CLI, "materialize", "--select", "*", "--executor", "in_process"], cwd=REPO, env=here,
                         capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    dask_env = env_for(tmp_path, config, "dask")
    cluster = tmp_path / "cluster"
    started = subprocess.run([CLUSTER, "start", str(cluster), "2"], cwd=REPO, env=dask_env, capture_output=True,
                             text=True, timeout=600)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        workers = {int(p) for p in (cluster / "worker_pids").read_text().split()}
        run = subprocess.Popen([CLI, "materialize", "--select", "*", "--executor", "dask",
                                "--run-config", str(cluster / "run-config.yaml")], cwd=REPO, env=dask_env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log, _ = run.communicate(timeout=1500)
        assert run.returncode == 0, log[-6000:]
    finally:
        subprocess.run([CLUSTER, "stop", str(cluster)], cwd=REPO, timeout=120)

    pids = step_pids(tmp_path / "dask" / "dagster_home")
    assert len(pids) > 20, sorted(pids)
    assert all(p <= workers for p in pids.values()), {k: p for k, p in pids.items() if not p <= workers}
    assert run.pid not in set().union(*pids.values())
    assert set().union(*pids.values()) == workers, "both workers take steps"

    releases = {name: tmp_path / name / "data" / "releases" for name in ("in_process", "dask")}
    assert len(tree_hashes(releases["in_process"])) > 5
    assert tree_hashes(releases["dask"]) == tree_hashes(releases["in_process"])
    in_process, on_dask = (table_rows(tmp_path / n / "data" / "mama.duckdb") for n in ("in_process", "dask"))
    assert sorted(on_dask) == sorted(in_process)
    differing = sorted(t for t in in_process if in_process[t] != on_dask[t])
    assert differing == [], differing
