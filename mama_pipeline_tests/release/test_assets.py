"""The release assets over the real store and IO manager, from hand-made upstream tables."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import dagster as dg
import pytest

from mama_pipeline.release._verify import verify_release
from mama_pipeline.release.assets import mamaretrieval_release, release_publication
from mama_pipeline.release.checks import mamaretrieval_release_verifies
from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.llm_stages import with_embedded

CONFIG = """
data_dir: {data}
retrieval:
  retrievers:
    - {{name: bm25, kind: bm25}}
    - {{name: dense, kind: dense}}
    - {{name: audit-only, kind: bm25}}
  pool_retrievers: [bm25, dense]
  pool_depth: 3
  audit: {{depth: 3, retrievers: [audit-only]}}
release:
  mamaretrieval_version: 0.3.0
  mamabench_version: 1.0.0
  publish: {{mamabench_repo_id: org/mb}}
"""
REMOTE_LLM = """
llm:
  query_writer: {base_urls: ["http://writer:8000/v1"], model: qwen-test}
  judge: {base_urls: ["http://judge-1:8000/v1"], model: judge-test}
  reference_judge: {base_urls: ["http://judge-2:8000/v1"], model: reference-test}
  query_rewriter: {base_urls: ["http://writer:8000/v1"], model: qwen-test}
  rewrite_gate: {base_urls: ["http://writer:8000/v1"], model: qwen-test}
"""
UPSTREAM = [
    dg.AssetSpec(k)
    for k in (
        "corpus_chunks",
        "generated_queries",
        "judgments",
        "pooled_pairs",
        "rankings",
        "mamabench_release",
        "query_gate_decisions",
        "judge_reliability",
    )
]


def setup_store(tmp_path: Path, remote_llm: bool) -> Path:
    data = tmp_path / "data"
    config = tmp_path / "config.yaml"
    config.write_text(with_embedded(CONFIG.format(data=data) + (REMOTE_LLM if remote_llm else "")))
    store = Store(data / "mama.duckdb")
    store.write_table("corpus_chunks", fx.chunks())
    store.write_table("generated_queries", fx.queries())
    store.write_table("judgments", fx.judgments())
    store.write_table("query_gate_decisions", fx.gate_decisions())
    store.write_table("judge_reliability", fx.reliability())
    store.write_table(
        "pooled_pairs",
        fx.pooled_pairs().with_columns(retrievers=[["bm25"]] * fx.pooled_pairs().height, is_seed=False, pool_size=4),
    )
    for name, part in fx.rankings().partition_by("retriever", as_dict=True).items():
        store.write_table("rankings", part, partition=name[0])
    return config


def materialize(config: Path, instance: dg.DagsterInstance, *assets) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*UPSTREAM, *assets],
        resources=shared_resources(str(config)),
        instance=instance,
        selection=[a.key for a in assets if isinstance(a, dg.AssetsDefinition)],
    )


@pytest.mark.parametrize("remote_llm", [True, False])
def test_release_asset_writes_a_verified_folder(tmp_path, monkeypatch, remote_llm):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup_store(tmp_path, remote_llm)
    with dg.instance_for_test() as instance:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                "corpus_chunks", metadata={"bundle_sha256": "ab" * 32, "bundle_commit": "(local file)"}
            )
        )
        result = dg.materialize(
            [*UPSTREAM, mamaretrieval_release, mamaretrieval_release_verifies],
            resources=shared_resources(str(config)),
            instance=instance,
            selection=[mamaretrieval_release.key],
        )
        assert result.success
        checks = result.get_asset_check_evaluations()
        assert [c.passed for c in checks] == [True]
        meta = result.asset_materializations_for_node("mamaretrieval_release")[0].metadata
        loaded = {
            e.event_specific_data.input_name
            for e in result.all_events
            if e.event_type_value == "LOADED_INPUT" and e.step_key == "mamaretrieval_release"
        }
    # the corpus, rankings, labels and pooled pairs are read sorted from the store, not loaded whole
    assert loaded == {"queries", "gate_decisions", "reliability"}
    assert list((tmp_path / "data" / "scratch").iterdir()) == []  # the sorted copies are removed
    folder = tmp_path / "data" / "releases" / "mamaretrieval" / "0.3.0"
    assert meta["path"].value == str(folder) and verify_release(folder).ok
    assert meta["smoke_test"].value is (not remote_llm)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["corpus"]["bundle_sha256"] == "ab" * 32 and manifest["corpus"]["commit"] is None
    assert manifest["judge"]["smoke_test"] is (not remote_llm)
    embedded = ["llm.query_writer", "llm.judge", "llm.reference_judge", "llm.query_rewriter", "llm.rewrite_gate"]
    assert manifest["embedded_model_stages"] == ([] if remote_llm else embedded)
    assert [r["name"] for r in manifest["retrieval"]["retrievers"]] == ["bm25", "dense"]
    assert manifest["figures"]["rankings_by_retriever"] == {"bm25": 6, "dense": 6}


def test_release_asset_fails_on_a_label_outside_the_corpus(tmp_path, monkeypatch):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup_store(tmp_path, True)
    Store(tmp_path / "data" / "mama.duckdb").write_table("corpus_chunks", fx.chunks().slice(1))
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [*UPSTREAM, mamaretrieval_release],
            resources=shared_resources(str(config)),
            instance=instance,
            selection=[mamaretrieval_release.key],
            raise_on_error=False,
        )
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error
    failure = error.cause.message if error.cause else error.message
    assert "refused" in failure and fx.IDS[0] in failure
    assert not (tmp_path / "data" / "releases").exists()


def test_publication_asset_dry_run_records_both_releases(tmp_path, monkeypatch):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup_store(tmp_path, True)
    mamabench = tmp_path / "data" / "releases" / "mamabench" / "1.0.0"
    (mamabench / "manifests").mkdir(parents=True)
    (mamabench / "README.md").write_text("card\n")
    card_sha = hashlib.sha256(b"card\n").hexdigest()
    (mamabench / "manifests" / "manifest.json").write_text(json.dumps({"files": {"README.md": card_sha}}))
    with dg.instance_for_test() as instance:
        instance.report_runless_asset_event(
            dg.AssetMaterialization("mamabench_release", metadata={"path": dg.MetadataValue.path(mamabench)})
        )
        assert materialize(config, instance, mamaretrieval_release).success
        result = materialize(config, instance, release_publication)
        assert result.success
        meta = result.asset_materializations_for_node("release_publication")[0].metadata
    assert meta["dry_run"].value is True
    ops = meta["mamaretrieval/operations"].value
    assert ops[0]["repo_id"] == "<release.publish.mamaretrieval_repo_id>" and ops[1]["tag"] == "0.3.0"
    assert len(ops[0]["add"]) == 14  # 11 files + the BEIR/MTEB corpus, queries and qrels
    mb = meta["mamabench/operations"].value
    assert mb[0]["repo_id"] == "org/mb" and mb[1]["tag"] == "1.0.0"
    assert {a["path_in_repo"] for a in mb[0]["add"]} == {"README.md", "manifests/manifest.json"}
    assert meta["mamabench/published"].value is False
