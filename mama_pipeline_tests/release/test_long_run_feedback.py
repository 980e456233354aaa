"""LLM stages report progress in the run log and token usage in the materialisation metadata."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import yaml

from mama_pipeline.settings import SAMPLE_CONFIG
from mama_pipeline_tests.support.llm_stages import with_embedded

REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).with_name("dagster"))
PROGRESS = re.compile(r"query_writer: (\d+)/(\d+) answered \((\d+) failed\), [\d.]+/s, est\. \S+ left")
IN_PROCESS = '{"execution": {"config": {"in_process": {}}}}'  # one process: seconds, not minutes
SELECTION = "corpus_chunks,corpus_issues,sampled_chunks,sampling_rejections,generated_queries,query_gate_decisions"


def test_query_writer_logs_progress_and_records_tokens(tmp_path, fake_llm, monkeypatch):
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    raw["corpus"]["bundle"] = str(SAMPLE_CONFIG.parent / raw["corpus"]["bundle"])
    raw["llm"]["query_writer"].update(base_urls=[fake_llm.url], model="fake-writer")
    config = tmp_path / "config.yaml"
    config.write_text(with_embedded(yaml.safe_dump(raw)))
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "MAMA_DATA_DIR": str(tmp_path / "data"), "MAMA_CONFIG": str(config)}
    out = subprocess.run(
        [
            DAGSTER,
            "asset",
            "materialize",
            "-m",
            "mama_pipeline_tests.release.feedback_defs",
            "--select",
            SELECTION,
            "--config-json",
            IN_PROCESS,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]

    monkeypatch.setenv("DAGSTER_HOME", str(home))  # restored after the test, whatever it was
    with dg.DagsterInstance.get() as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("query_gate_decisions"))
        meta = {k: v.value for k, v in event.asset_materialization.metadata.items()}
        messages = [e.user_message for e in instance.all_logs(event.run_id)]
    lines = [m for m in messages if PROGRESS.search(m)]
    assert lines, "no progress line in the run log"
    done, total, failed = map(int, PROGRESS.search(lines[-1]).groups())
    assert done == total == meta["query_writer/requests"] > 0 and failed == 0
    assert meta["query_writer/http_calls"] >= total
    assert meta["query_writer/prompt_tokens_new"] > 0 and meta["query_writer/completion_tokens_new"] > 0
    assert meta["query_writer/prompt_tokens_cached_answers"] == 0
    assert "query_writer/note" not in meta  # a configured endpoint is not the smoke-test model
    assert meta["query_writer/embedded_model"] is False
