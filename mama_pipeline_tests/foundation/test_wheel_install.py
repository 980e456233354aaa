"""Installed as a wheel into a fresh virtual environment outside the checkout, the package keeps its table
contracts (sql/), its Dagster instance file and run configuration, and its definitions load."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "mama_pipeline_tests" / "snapshots" / "asset_graph.json"
PROBE = """
import json, sys
from pathlib import Path
import mama_pipeline
from mama_pipeline import cli
from mama_pipeline.common.dagster_home import REPO_DAGSTER_YAML
from mama_pipeline.common.project_files import project_file
from mama_pipeline.definitions import defs
from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import ddl_path

store = Store(Path("probe.duckdb"))
store.ensure_tables("judgments")
print(json.dumps({
    "package": mama_pipeline.__file__, "prefix": sys.prefix, "ddl": str(ddl_path("judgments")),
    "dagster_yaml": str(REPO_DAGSTER_YAML), "run_config": str(cli.RUN_CONFIG),
    "sql_files": len(list(project_file("sql", "tables").glob("*/*.sql"))),
    "assets": len(defs.resolve_asset_graph().get_all_asset_keys()),
    "columns": store.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'judgments' "
                           "ORDER BY ordinal_position")["column_name"].to_list(),
}))
"""


def _copy_checkout(dest: Path) -> Path:
    """The checkout's files, without its environments, data and build outputs (pip builds in the source tree)."""
    shutil.copytree(
        REPO,
        dest,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".label-studio-venv",
            "data",
            "build",
            "*.egg-info",
            "__pycache__",
            ".pytest_cache",
            "bench_out",
            "_shipped",
        ),
    )
    return dest


@pytest.mark.slow
def test_the_wheel_outside_the_checkout_loads_its_definitions_and_table_contracts(tmp_path):
    src = _copy_checkout(tmp_path / "src")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(wheels),
            str(src),
        ],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("mama_pipeline-*.whl")

    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # the dependencies come from the test's own environment: its site-packages as a plain path line, so its
    # .pth files (the checkout's editable install among them) are not processed
    (site / "deps.pth").write_text(sysconfig.get_paths(vars={"base": sys.prefix})["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True, cwd=tmp_path
    )

    run = tmp_path / "elsewhere"
    run.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([str(python), "-c", PROBE], cwd=run, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])

    installed = site.resolve()
    for key in ("package", "ddl", "dagster_yaml", "run_config"):
        assert Path(got[key]).resolve().is_relative_to(installed), (key, got[key])
    assert Path(got["prefix"]).resolve() == env_dir.resolve()
    assert got["sql_files"] == len(list((REPO / "sql" / "tables").glob("*/*.sql")))
    assert got["assets"] == len(json.loads(SNAPSHOT.read_text())["assets"])
    expected = duckdb.connect()
    expected.execute((REPO / "sql" / "tables" / "judging" / "judgments.sql").read_text())
    columns = [
        r[0]
        for r in expected.execute(
            "SELECT column_name FROM information_schema.columns WHERE "
            "table_name = 'judgments' ORDER BY ordinal_position"
        ).fetchall()
    ]
    assert got["columns"] == columns and len(columns) > 3
