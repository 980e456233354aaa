"""The corpus assets and checks on a bundle with a bad chunk, in fail and skip modes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from mama_pipeline.corpus.definitions import build_defs as build_corpus_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import SAMPLE_CONFIG, load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded

defs = build_corpus_defs(load_settings())

SAMPLE_BUNDLE = SAMPLE_CONFIG.parent / "sample_data" / "corpus" / "chunks_for_rag.txt"


def workspace(tmp_path: Path, on_bad: str) -> Path:
    lines = SAMPLE_BUNDLE.read_text().splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("<sep>[SOURCE:oxford-handbook-of-midwifery"))
    lines[header] = lines[header][:-17] + "0000000000000000]"  # wrong CID
    bundle = tmp_path / "chunks_for_rag.txt"
    bundle.write_text("\n".join(lines) + "\n")
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    raw["data_dir"] = str(tmp_path / "data")
    raw["corpus"].update(bundle=str(bundle), on_bad_chunk=on_bad)
    config = tmp_path / "config.yaml"
    config.write_text(with_embedded(yaml.safe_dump(raw)))
    return config


def run(config: Path) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*defs.assets, *defs.asset_checks], resources=shared_resources(str(config)), raise_on_error=False
    )


def test_fail_mode_stops_with_file_and_line(tmp_path):
    config = workspace(tmp_path, "fail")
    result = run(config)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.event_specific_data.error.cause.message
    assert "chunks_for_rag.txt:" in message and "CID does not match" in message


def test_skip_mode_lists_the_chunk_and_warns(tmp_path):
    config = workspace(tmp_path, "skip")
    result = run(config)
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert not checks["bundle_is_clean"].passed
    assert checks["bundle_is_clean"].severity == dg.AssetCheckSeverity.WARN
    assert checks["bundle_is_clean"].metadata["cid_mismatches"].value == 1
    assert checks["chunk_ids_unique_and_content_derived"].passed
    store = Store(tmp_path / "data" / "mama.duckdb")
    issues = store.read_table("corpus_issues")
    assert issues.select("source", "reason", "action").rows() == [
        ("oxford-handbook-of-midwifery", "cid_mismatch", "skipped")
    ]
    meta = {
        e.materialization.asset_key.to_user_string(): e.materialization.metadata
        for e in result.get_asset_materialization_events()
    }
    assert meta["corpus_chunks"]["skipped/cid_mismatch"].value == 1
    assert meta["corpus_chunks"]["cid_convention"].value == "body"
    assert meta["corpus_chunks"]["cids_matching_neither"].value == 1
    assert meta["corpus_chunks"]["chunks"].value == store.read_table("corpus_chunks").height == 282
