"""The demo cut of the bundled sample on a real dask.distributed cluster (dagster-dask).

The commands are docs/scale-out.md's recipe. A scheduler and two worker processes are started by scripts/dask_cluster.sh; `mama-pipeline materialize
--executor dask` sends every step to them. The same sample, run in process, must give byte-identical
releases and the same rows in every table of the DuckDB store; every step must have run in a worker. The dask run
starts from a store holding only the in-process run's embedding cache (a vector is a function of the model and the
text, ``retrieval/_embedding_cache.py``): encoding the sample again in each worker was most of its time on two cores;
every table the assets write is built again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import duckdb
import pytest
import yaml

from mama_pipeline.cli import DASK_MODULE
from mama_pipeline.run_plan import OBSERVATION_TAGS
from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import MEASURED as STORE_MEASURED
from mama_pipeline_tests.release.corpus_change_driver import tree_hashes
from mama_pipeline_tests.support.demo_store import CLI, REPO, demo_config, env_for, materialize
from mama_pipeline_tests.support.fake_llm_server import running_server
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of

DAGSTER = str(Path(sys.executable).with_name("dagster"))
CLUSTER = str(REPO / "scripts" / "dask_cluster.sh")


# when an answer arrived and how long it took, and the plan's timings from those latencies: measurements of the run,
# not results (the answer itself is compared; the store leaves the plan's out of its content versions too)
MEASURED = {"llm_responses": ("latency_s", "created_at"), "llm_plan": STORE_MEASURED["llm_plan"]}


def table_rows(db: Path) -> dict[str, list[tuple]]:
    """Every row of every table of the store, in a fixed order, without the MEASURED columns."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        rows = {}
        for t in sorted(tables):
            skip = f" EXCLUDE ({', '.join(MEASURED[t])})" if t in MEASURED else ""
            rows[t] = sorted(con.execute(f'SELECT *{skip} FROM "{t}"').fetchall(), key=repr)
        return rows


def step_pids(home: Path) -> dict[str, set[int]]:
    """Process ids of every step start recorded on the instance at ``home``, by step key (the runs that observe
    the inputs before planning run in the launching process by design, and materialise nothing)."""
    pids: dict[str, set[int]] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            if OBSERVATION_TAGS.items() <= run.tags.items():
                continue
            for rec in instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_START).records:
                entry = rec.event_log_entry
                pids.setdefault(entry.step_key, set()).add(entry.dagster_event.pid)
    return pids


def test_dask_executor_without_a_run_config_is_refused_in_one_line(tmp_path):
    out = subprocess.run(
        [CLI, "materialize", "--executor", "dask"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "MAMA_DATA_DIR": str(tmp_path / "data")},
        timeout=120,
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "mama-pipeline: error: --executor dask needs --run-config naming the scheduler "
        "(scripts/dask_cluster.sh start writes one; docs/scale-out.md)"
    ]
    assert not (tmp_path / "data").exists(), "nothing is started or written"
    ignored = subprocess.run(
        [CLI, "materialize", "--executor", "in_process", "--run-config", "rc.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "MAMA_DATA_DIR": str(tmp_path / "data")},
        timeout=120,
    )
    assert ignored.returncode == 2 and ignored.stderr.strip().splitlines() == [
        "mama-pipeline: error: --run-config is for the multiprocess and dask executors; in_process runs take none"
    ]
    assert not (tmp_path / "data").exists()


def test_dask_definitions_run_every_step_on_the_dask_executor(tmp_path):
    probe = (
        "import json; from mama_pipeline.scale_out.dask_definitions import defs; "
        "from mama_pipeline.definitions import defs as base; import dagster as dg; "
        "job = defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey('judged_labels')]); "
        "print(json.dumps([job.executor_def.name, sorted(map(str, defs.resolve_asset_graph().get_all_asset_keys())) "
        "== sorted(map(str, base.resolve_asset_graph().get_all_asset_keys()))]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MAMA_DATA_DIR": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == '["dask", true]'


@pytest.mark.slow
def test_sample_on_dask_workers_matches_the_in_process_run(tmp_path, demo_store):
    config = demo_store.config  # the test run's demo: the same configuration, run in process
    dask_env = env_for(tmp_path, config, "dask")
    with_embeddings_of(demo_store.data / "mama.duckdb", tmp_path / "dask" / "data" / "mama.duckdb")
    cluster = tmp_path / "cluster"
    started = subprocess.run(
        [CLUSTER, "start", str(cluster), "2"], cwd=REPO, env=dask_env, capture_output=True, text=True, timeout=600
    )
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        workers = {int(p) for p in (cluster / "worker_pids").read_text().split()}
        run = subprocess.Popen(
            [
                CLI,
                "materialize",
                "--select",
                "*",
                "--executor",
                "dask",
                "--run-config",
                str(cluster / "run-config.yaml"),
            ],
            cwd=REPO,
            env=dask_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        log, _ = run.communicate(timeout=1500)
        assert run.returncode == 0, log[-6000:]
    finally:
        subprocess.run([CLUSTER, "stop", str(cluster)], cwd=REPO, timeout=120)

    pids = step_pids(tmp_path / "dask" / "dagster_home")
    assert len(pids) > 20, sorted(pids)
    assert all(p <= workers for p in pids.values()), {k: p for k, p in pids.items() if not p <= workers}
    assert run.pid not in set().union(*pids.values())
    assert set().union(*pids.values()) == workers, "both workers take steps"

    releases = {"in_process": demo_store.data / "releases", "dask": tmp_path / "dask" / "data" / "releases"}
    assert len(tree_hashes(releases["in_process"])) > 5
    assert tree_hashes(releases["dask"]) == tree_hashes(releases["in_process"])
    in_process, on_dask = (table_rows(d / "mama.duckdb") for d in (demo_store.data, tmp_path / "dask" / "data"))
    assert sorted(on_dask) == sorted(in_process) and len(in_process) > 20
    assert len(in_process["llm_responses"]) > 20 and len(in_process["judgment_labels"]) > 5
    differing = sorted(t for t in in_process if in_process[t] != on_dask[t])
    assert differing == [], differing


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed worker is not this process's child: it may stay a zombie of init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def judge_starts(home: Path) -> list[tuple[str, int, float]]:
    """(partition, worker pid, time) of every judged_labels step start on the instance at ``home``."""
    starts = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": ["shard_000", "shard_001"]})):
            for rec in instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_START).records:
                entry = rec.event_log_entry
                if entry.step_key == "judged_labels":
                    starts.append((run.tags["dagster/partition"], entry.dagster_event.pid, entry.timestamp))
    return sorted(starts, key=lambda s: s[2])


@pytest.mark.slow
def test_two_shards_run_side_by_side_on_two_workers_and_a_killed_worker_loses_nothing(tmp_path, sample_embeddings):
    with running_server(delay=0.4) as server:
        config = demo_config(tmp_path / "sample", server.url)
        raw = yaml.safe_load(config.read_text())
        raw["llm"]["judge"]["concurrency"] = 1  # one answer at a time per shard: judging lasts long enough to kill
        raw["retrieval"]["pool_depth"] = 5  # more pairs per shard than the demo's top 1
        config.write_text(with_embedded(yaml.safe_dump(raw)))
        env = env_for(tmp_path, config, "dask")
        home, db = tmp_path / "dask" / "dagster_home", tmp_path / "dask" / "data" / "mama.duckdb"
        with_embeddings_of(sample_embeddings, db)  # the demo's chunks are the sample's: encoded once per test run
        cluster = tmp_path / "cluster"
        started = subprocess.run(
            [CLUSTER, "start", str(cluster), "2"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
        )
        try:
            assert started.returncode == 0, started.stderr[-3000:]
            workers = [int(p) for p in (cluster / "worker_pids").read_text().split()]
            run_config = str(cluster / "run-config.yaml")
            # what the shards judge is made in process: every step on the workers is the other test's point
            materialize(env, "*pooled_pairs", "--executor", "in_process", timeout=1500)
            pairs = Store(db).read_table("pooled_pairs").height
            server.reset()
            # docs/scale-out.md: one run per shard, started together
            shards = [
                subprocess.Popen(
                    [
                        DAGSTER,
                        "asset",
                        "materialize",
                        "-m",
                        DASK_MODULE,
                        "--select",
                        "judged_labels",
                        "--partition",
                        shard,
                        "-c",
                        run_config,
                    ],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
                for shard in ("shard_000", "shard_001")
            ]
            deadline = time.monotonic() + 600
            while (len(judge_starts(home)) < 2 or server.stats()["chat_calls"] < 4) and time.monotonic() < deadline:
                time.sleep(0.5)
            first = judge_starts(home)
            assert len(first) == 2 and {pid for _, pid, _ in first} == set(workers), first  # one shard per worker
            victim = next(pid for shard, pid, _ in first if shard == "shard_000")
            os.kill(victim, signal.SIGKILL)
            while alive(victim):
                time.sleep(0.05)
            with Store(db).connect() as con:
                stored_at_kill = con.execute("SELECT count(*) FROM llm_responses WHERE stage = 'judge'").fetchone()[0]
            asked_at_kill = server.stats()["chat_calls"]
            logs = [p.communicate(timeout=1500)[0] for p in shards]
            codes = [p.returncode for p in shards]
            starts = judge_starts(home)
        finally:
            subprocess.run([CLUSTER, "stop", str(cluster)], cwd=REPO, timeout=120)
        stats = server.stats()
    assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
    survivor = next(pid for pid in workers if pid != victim)
    assert [(s, p) for s, p, _ in starts[2:]] == [("shard_000", survivor)], starts  # the other worker took it over
    labels = Store(db).query("SELECT query_id, chunk_id FROM judgment_labels")
    assert labels.height == pairs and labels.unique().height == pairs, "every pooled pair labelled once"
    asked_twice = stats["chat_calls"] - stats["distinct_requests"]
    assert stats["distinct_requests"] == pairs
    assert 0 <= asked_twice <= asked_at_kill - stored_at_kill, (asked_twice, asked_at_kill, stored_at_kill)
    print(f"pairs {pairs}; asked at the kill {asked_at_kill}, stored {stored_at_kill}; asked twice {asked_twice}")
