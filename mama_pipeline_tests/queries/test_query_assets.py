"""The corpus and queries assets end to end, against the fake OpenAI-compatible server."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.corpus._hashing import chunk_id
from mama_pipeline.corpus.definitions import build_defs as build_corpus_defs
from mama_pipeline.queries.definitions import build_defs as build_queries_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import SAMPLE_CONFIG, load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded

corpus_defs = build_corpus_defs(load_settings())
queries_defs = build_queries_defs(load_settings())

SAMPLE_BUNDLE = SAMPLE_CONFIG.parent / "sample_data" / "corpus" / "chunks_for_rag.txt"
TABLES = ["corpus_chunks", "sampled_chunks", "sampling_rejections", "query_gate_decisions", "generated_queries"]


@pytest.fixture
def workspace(tmp_path: Path, fake_llm) -> Path:
    bundle = tmp_path / "chunks_for_rag.txt"
    shutil.copyfile(SAMPLE_BUNDLE, bundle)
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    raw["data_dir"] = str(tmp_path / "data")
    raw["corpus"]["bundle"] = str(bundle)
    raw["llm"]["query_writer"].update(base_urls=[fake_llm.url], model="fake-model", backoff_base_s=0.01)
    (tmp_path / "config.yaml").write_text(with_embedded(yaml.safe_dump(raw)))
    return tmp_path


def materialise(workspace: Path) -> dict[str, dict]:
    result = dg.materialize(
        [*corpus_defs.assets, *queries_defs.assets, *corpus_defs.asset_checks, *queries_defs.asset_checks],
        resources=shared_resources(str(workspace / "config.yaml")),
    )
    assert result.success
    meta = {
        ev.materialization.asset_key.to_user_string(): {k: v.value for k, v in ev.materialization.metadata.items()}
        for ev in result.get_asset_materialization_events()
    }
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "chunk_ids_unique_and_content_derived": True,
        "bundle_is_clean": True,
        "quotas_filled": False,
        "sample_matches_corpus": True,
        "queries_follow_rules": True,
        "no_gate_failures": True,
        "query_writer_failure_rate_under_bound": True,
    }
    return meta


def tables(workspace: Path) -> dict[str, pl.DataFrame]:
    store = Store(workspace / "data" / "mama.duckdb")
    return {t: store.read_table(t) for t in TABLES}


def test_rematerialising_asks_nothing_and_editing_one_chunk_asks_only_it(workspace, fake_llm):
    calls_before = fake_llm.stats()["chat_calls"]
    first = materialise(workspace)
    gate = first["query_gate_decisions"]
    assert gate["query_writer/http_calls"] == gate["query_writer/requests"] == 28
    assert fake_llm.stats()["chat_calls"] - calls_before == 28
    assert first["sampled_chunks"]["shortfall"] == 1
    version = first["corpus_chunks"]["corpus_version"]
    assert {m["corpus_version"] for m in first.values()} == {version}
    before = tables(workspace)
    queries = before["generated_queries"]
    assert queries.get_column("query_id").to_list() == [f"q_{i:05d}" for i in range(1, queries.height + 1)]
    assert queries.get_column("seed_chunk_id").to_list() == sorted(queries.get_column("seed_chunk_id").to_list())
    assert set(queries.get_column("prompt_hash")) == {gate["prompt_hash"]}
    assert set(queries.get_column("model")) == {"fake-model"}
    assert set(queries.get_column("temperature")) == {0.0}

    # nothing changed: no call, identical tables
    again = materialise(workspace)
    assert again["query_gate_decisions"]["query_writer/http_calls"] == 0
    assert again["query_gate_decisions"]["query_writer/cache_hits"] == 28
    after = tables(workspace)
    for name in TABLES:
        assert after[name].equals(before[name]), name

    # one sampled chunk's text edited (header CID updated): new id, one call, other ids unchanged
    target = before["sampled_chunks"].row(5, named=True)
    new_text = target["text"].replace(".", ";", 1)
    assert new_text != target["text"]
    bundle = workspace / "chunks_for_rag.txt"
    content = bundle.read_text()
    assert content.count(target["text"]) == 1
    content = content.replace(target["text"], new_text).replace(
        f"CID:{target['chunk_id']}]", f"CID:{chunk_id(new_text)}]"
    )
    bundle.write_text(content)
    edited = materialise(workspace)
    assert edited["corpus_chunks"]["corpus_version"] != version
    assert edited["query_gate_decisions"]["query_writer/http_calls"] == 1
    new = tables(workspace)
    swapped = set(new["sampled_chunks"]["chunk_id"]) ^ set(before["sampled_chunks"]["chunk_id"])
    assert swapped == {target["chunk_id"], chunk_id(new_text)}
    old_ids = dict(before["generated_queries"].select("seed_chunk_id", "query_id").rows())
    new_ids = dict(new["generated_queries"].select("seed_chunk_id", "query_id").rows())
    assert new_ids[chunk_id(new_text)] == f"q_{len(old_ids) + 1:05d}"
    assert {k: v for k, v in new_ids.items() if k != chunk_id(new_text)} == {
        k: v for k, v in old_ids.items() if k != target["chunk_id"]
    }
