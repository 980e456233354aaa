"""Definitions load fast and light; parallel steps share the store; secrets stay out of every record."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).with_name("dagster"))


def run_dagster(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    full_env = {**os.environ, "DAGSTER_HOME": str(home), "MAMA_DATA_DIR": str(tmp_path / "data"), **env}
    return subprocess.run([DAGSTER, *args], cwd=REPO, env=full_env, capture_output=True, text=True, timeout=600)


def test_definitions_validate_without_heavy_imports(tmp_path):
    out = run_dagster(["definitions", "validate", "-m", "mama_pipeline.definitions"], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, mama_pipeline.definitions; "
            "print(sorted(m for m in ('torch','pyserini','faiss','sentence_transformers','openai') if m in sys.modules))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.stdout.strip() == "[]", probe.stderr[-2000:]


def test_wrong_config_key_fails_at_load_with_key_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm:\n  judge:\n    temprature: 0\n")
    out = run_dagster(["definitions", "validate", "-m", "mama_pipeline.definitions"], tmp_path, MAMA_CONFIG=str(bad))
    assert out.returncode != 0
    assert "llm.judge.temprature" in out.stdout + out.stderr


def test_two_independent_assets_materialise_in_parallel_processes(tmp_path):
    out = run_dagster(
        [
            "asset",
            "materialize",
            "-m",
            "mama_pipeline_tests.foundation.parallel_defs",
            "--select",
            "left_table,right_table",
        ],
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "multiprocess" in out.stderr
    store = Store(tmp_path / "data" / "mama.duckdb")
    left, right = store.read_table("left_table").row(0), store.read_table("right_table").row(0)
    assert left[1] < right[2] and right[1] < left[2], "the two steps did not overlap in time"


def test_api_key_never_reaches_store_logs_or_metadata(tmp_path, fake_llm):
    secret = "sk-test-SECRET-4f9a1c7e"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"llm:\n  judge:\n    base_urls: [{fake_llm.url}]\n    model: fake\n    api_key_env: MAMA_TEST_KEY\n"
        )
    )
    out = run_dagster(
        ["asset", "materialize", "-m", "mama_pipeline_tests.foundation.parallel_defs", "--select", "llm_probe"],
        tmp_path,
        MAMA_CONFIG=str(cfg),
        MAMA_TEST_KEY=secret,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    import hashlib

    assert hashlib.sha256(secret.encode()).hexdigest()[:12] in fake_llm.stats()["bearer_digests"]  # it was sent
    assert secret not in out.stdout + out.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "cfg.yaml"]
    assert any(p.suffix == ".duckdb" for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), f"API key found in {path}"


def test_dagster_cli_with_part_of_a_multi_asset_is_one_line_naming_the_rest(tmp_path):
    out = run_dagster(
        ["asset", "materialize", "-m", "mama_pipeline.definitions", "--select", "corpus_chunks"], tmp_path
    )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "mama_pipeline: error: --select 'corpus_chunks': corpus_chunks, corpus_issues are made together in one "
        "step; select them together (--select corpus_chunks,corpus_issues)"
    )
    assert "Traceback" not in out.stderr


def test_dagster_cli_without_dagster_home_says_the_run_is_recorded_nowhere():
    import dagster as dg

    from mama_pipeline.definitions import NO_DAGSTER_HOME, PartOfAStep, dagster_cli_check

    @dg.multi_asset(outs={"chunks": dg.AssetOut(), "issues": dg.AssetOut()})
    def corpus():
        yield dg.Output(1, output_name="chunks")
        yield dg.Output(1, output_name="issues")

    @dg.asset(deps=["chunks"])
    def queries() -> None:
        pass

    defs = dg.Definitions(assets=[corpus, queries])
    cli = ["/venv/bin/dagster", "asset", "materialize", "-m", "mod", "--select"]
    assert dagster_cli_check(defs, [*cli, "chunks,issues,queries"], {}) == NO_DAGSTER_HOME
    assert dagster_cli_check(defs, [*cli, "queries"], {"DAGSTER_HOME": "/h"}) is None
    assert dagster_cli_check(defs, ["/venv/bin/mama-pipeline", "materialize", "--select", "chunks"], {}) is None
    try:
        dagster_cli_check(defs, [*cli, "issues,queries"], {"DAGSTER_HOME": "/h"})
    except PartOfAStep as exc:
        assert "chunks, issues are made together in one step; select them together (--select " in str(exc)
        assert str(exc).endswith("(--select chunks,issues,queries)")
    else:
        raise AssertionError("part of a multi-asset selected: no error")


FIRST_READ = """
import importlib, json, sys
import polars as pl, yaml
from mama_pipeline.cli import RUN_CONFIG
from mama_pipeline.store import Store
forkserver = yaml.safe_load(RUN_CONFIG.read_text())["execution"]["config"]["multiprocess"]["start_method"]["forkserver"]
for name in forkserver["preload_modules"]:
    importlib.import_module(name)
store = Store(sys.argv[1])
before = {m.partition(".")[0] for m in sys.modules}
store.write_table("t", pl.DataFrame({"a": ["x", "y"], "b": [1, 2]}))
store.read_table("t", where={"a": ["y"]})  # a query with parameters
print(json.dumps(sorted({m.partition(".")[0] for m in sys.modules} - before)))
"""


def test_a_steps_first_store_write_and_read_import_nothing_the_forkserver_did_not_preload(tmp_path):
    # DuckDB imports pandas and pyarrow at a process's first query with parameters: without them preloaded in
    # `mama-pipeline materialize`'s forkserver, every step paid that import (0.4-0.7 s) in its first store read
    probe = subprocess.run(
        [sys.executable, "-c", FIRST_READ, str(tmp_path / "s.duckdb")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert probe.stdout.strip().splitlines()[-1] == "[]"
