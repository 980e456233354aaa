"""Acceptance: an edited sample chunk triggers the corpus sensor, and the run it requests judges only the new pairs.

Also: rebuilding from the same inputs and cached LLM answers gives a byte-identical release.
Runs the real corpus, queries, retrieval (all-MiniLM-L6-v2), judging and release assets, with a
fake OpenAI-compatible server as every LLM, in a subprocess (definitions read MAMA_CONFIG at import). The store
starts holding the sample's document vectors (conftest's ``sample_embeddings``); the edited chunk is encoded by the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mama_pipeline.llm.settings import LLM_STAGES as ALL_LLM_STAGES
from mama_pipeline.settings import SAMPLE_CONFIG
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of

REPO = Path(__file__).resolve().parents[2]
DEFS_MODULE = "mama_pipeline.definitions"
# every stage on the fake server: the embedded model's answers can time out on a busy machine, and an answer
# that timed out is asked again on the next run, so the rebuild would not be from the same cached answers
# (cross_model_judge is optional: setting it would add a reference judge)
LLM_STAGES = tuple(stage for stage in ALL_LLM_STAGES if stage != "cross_model_judge")


def write_config(root: Path, llm_url: str) -> Path:
    shutil.copytree(SAMPLE_CONFIG.parent / "sample_data", root / "sample_data")
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    for stage in LLM_STAGES:
        raw["llm"].setdefault(stage, {}).update(base_urls=[llm_url], model="fake-model")
    # dense: the fake writer's questions share no words with the corpus, so BM25 would find nothing
    raw["retrieval"].update(
        retrievers=[{"name": "minilm", "kind": "dense"}],
        pool_depth=5,
        audit={"n_queries": 3, "seed": 0, "depth": 5, "retrievers": []},
    )
    raw["judging"] = {"shards": 2}
    raw.pop("systems", None)  # answering systems are not part of the corpus-change path (their RAG retriever is bm25)
    config = root / "config.yaml"
    config.write_text(with_embedded(yaml.safe_dump(raw)))
    return config


@pytest.mark.slow
def test_edited_chunk_triggers_sensor_and_only_new_pairs_are_judged(tmp_path, fake_llm, sample_embeddings):
    config = write_config(tmp_path / "sample", fake_llm.url)
    with_embeddings_of(sample_embeddings, tmp_path / "data" / "mama.duckdb")
    env = {
        **os.environ,
        "MAMA_CONFIG": str(config),
        "MAMA_DATA_DIR": str(tmp_path / "data"),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "OPENAI_API_KEY": "unused",
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mama_pipeline_tests.release.corpus_change_driver",
            DEFS_MODULE,
            str(tmp_path),
            fake_llm.url,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["first_runs_ok"] and r["second_runs_ok"] and r["change_runs_ok"]
    assert r["calls_on_rebuild"] == 0, "a rebuild from cached answers must not call the LLM"
    assert r["release_files"] > 5
    assert r["changed_on_rebuild"] == [], "same inputs and cached answers must give byte-identical release files"
    assert r["tick_before_edit"] == "SkipReason" and r["tick_after_edit"] == "RunRequest"
    assert r["not_requested"] == [], "the sensor must request everything the release is built from"
    assert r["new_pairs"] > 0 and r["new_pairs_with_new_chunk"] > 0
    assert r["judge"]["new_labels"] == r["new_pairs"], "exactly the pairs without a stored label are labelled"
    assert r["judge"]["asked"] == r["new_pairs"], "the judge is asked for the new pairs only"
    # the reference judge labels pilot pairs it lacks; the robustness track judges the (parent, new chunk)
    # holes its clean and variant rankings surface; the multi-passage track labels the facts of its pooled pairs
    # that hold the new chunk; nothing else is asked
    assert r["calls_after_edit"] == (
        r["new_pairs"] + r["writer_calls"] + r["reference_calls"] + r["hole_calls"] + r["multipassage_calls"]
    )
    assert r["old_id_released"] == 0 and r["new_id_released"] > 0
    assert r["corpus_version_changed"] and r["smoke_test"] is False
