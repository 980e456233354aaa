"""The demo cut of the bundled sample with every LLM stage on a fake server, and one demo run of it.

The demo run is the expensive build the end-to-end tests read (conftest's ``demo_store``: one per test run): the
settings each asset read are recorded as it runs (``settings_reads``), and its store, releases and Dagster instance
are what the dask run is compared with and what the planning tests plan against. It starts from a store holding
the sample's document vectors (conftest's ``sample_embeddings``; the demo's chunks are the sample's): its encoders
still run, through the embedding cache, and every query is encoded by the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from mama_pipeline.cli import DEMO_CONFIG
from mama_pipeline_tests.support.llm_stages import served_without_bm25, with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of
from mama_pipeline_tests.support.settings_reads import recorded

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("mama-pipeline"))


def demo_config(root: Path, llm_url: str) -> Path:
    """The demo configuration (the demo-sized cut of the bundled sample) with every LLM stage and answering
    system on ``llm_url``: the full sample's BEIR, SPLADE and LLM work is too slow to run three times in the suite
    on two cores."""
    shutil.copytree(DEMO_CONFIG.parent / "sample_data", root / "sample_data")
    raw = yaml.safe_load(DEMO_CONFIG.read_text())
    served_without_bm25(raw, llm_url)
    config = root / "config.yaml"
    config.write_text(with_embedded(yaml.safe_dump(raw)))
    return config


def env_for(tmp_path: Path, config: Path, name: str) -> dict[str, str]:
    return {
        **os.environ,
        "MAMA_CONFIG": str(config),
        "MAMA_DATA_DIR": str(tmp_path / name / "data"),
        "DAGSTER_HOME": str(tmp_path / name / "dagster_home"),
        "OPENAI_API_KEY": "unused",
    }


def run_ok(command: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``command`` from the repository under ``env``, its output captured; it must exit 0."""
    out = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def materialize(env: dict[str, str], select: str, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``mama-pipeline materialize --select select *extra`` from the repository under ``env``; it must exit 0."""
    return run_ok([CLI, "materialize", "--select", select, *extra], env, timeout)


@dataclass(frozen=True)
class DemoStore:
    """A finished ``mama-pipeline demo`` of :func:`demo_config`: read it, never write to it."""

    config: Path
    env: dict[str, str]  # MAMA_CONFIG, MAMA_DATA_DIR and DAGSTER_HOME of the run
    reads: dict[str, set[str]]  # asset key -> the settings paths it was seen reading

    @property
    def data(self) -> Path:
        return Path(self.env["MAMA_DATA_DIR"])

    @property
    def home(self) -> Path:
        return Path(self.env["DAGSTER_HOME"])


def build_demo_store(root: Path, llm_url: str, vectors: Path) -> DemoStore:
    """``mama-pipeline demo`` on :func:`demo_config` under ``root``, every LLM stage on ``llm_url``, from a store
    holding ``vectors``' embedding cache, recording the settings each asset reads."""
    config = demo_config(root / "sample", llm_url)
    env = {**env_for(root, config, "demo"), "PYTHONPATH": str(REPO)}
    with_embeddings_of(vectors, Path(env["MAMA_DATA_DIR"]) / "mama.duckdb")
    reads = root / "reads.jsonl"
    recording = "from mama_pipeline_tests.support.settings_reads import main; main()"
    run_ok([sys.executable, "-c", recording, str(reads), "demo"], env, timeout=1500)
    return DemoStore(config, env, recorded(reads))
