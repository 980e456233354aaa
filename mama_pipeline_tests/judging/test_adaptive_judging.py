"""Adaptive judging end to end against the fault-injecting fake server: the budget is what the server sees, the
judged set is reproducible, unjudged pairs never become labels; full judges every pair as before."""

import dagster as dg
import polars as pl
import pytest

from mama_pipeline.judging import definitions as judging
from mama_pipeline.judging._judge import judge_pairs, stored_chunks
from mama_pipeline.judging._label_store import LABEL_TABLE
from mama_pipeline.judging._rubric import output_model
from mama_pipeline.resources import LLMResource, SettingsResource, shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.judging import judging_defs
from mama_pipeline_tests.support.llm_stages import with_embedded

SHARDS = [f"shard_{i:03d}" for i in range(4)]
BUDGET, SAMPLE = 20, 10
DOWNSTREAM = ["judgments", "judging_failures", "unjudged_estimate"]


@dg.asset(key="rankings", partitions_def=dg.StaticPartitionsDefinition(["bm25"]))
def rankings(pooled_pairs: pl.DataFrame) -> pl.DataFrame:
    """The pool's one run (bm25), ranked as the pool says."""
    return pooled_pairs.select(
        "query_id", retriever=pl.lit("bm25"), rank="best_rank", chunk_id="chunk_id", score=1.0 / pl.col("best_rank")
    )


def _build(tmp_path, name, fake_llm, monkeypatch, judging_yaml):
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / name}\n"
            f"llm:\n  judge: {{base_urls: [{fake_llm.url}], model: fake-judge, max_retries: 0, backoff_base_s: 0.01, "
            "max_failure_rate: 0.5}\n"
            f"judging: {judging_yaml}\n"
        )
    )
    monkeypatch.setenv("MAMA_CONFIG", str(cfg))
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    resources = shared_resources(str(cfg))
    upstream = [judging_defs.queries, judging_defs.chunks, judging_defs.pooled_pairs, rankings]
    assert dg.materialize(upstream[:3], resources=resources).success
    assert dg.materialize(
        upstream, selection=dg.AssetSelection.assets("rankings"), partition_key="bm25", resources=resources
    ).success
    area = judging.build_defs(load_settings())
    assets = [*area.assets, *upstream, judging_defs.audit_pool]
    fake_llm.reset()
    assert dg.materialize(assets, selection=dg.AssetSelection.assets("judged_set"), resources=resources).success
    after_set = fake_llm.stats()
    for key in SHARDS:
        sel = dg.AssetSelection.assets("judged_labels")
        assert dg.materialize(assets, selection=sel, partition_key=key, resources=resources).success
    result = dg.materialize(
        [*assets, *area.asset_checks], selection=dg.AssetSelection.assets(*DOWNSTREAM), resources=resources
    )
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    return Store(tmp_path / name / "mama.duckdb"), after_set, checks, cfg


def _adaptive(method: str) -> str:
    return f"{{shards: 4, strategy: adaptive, method: {method}, budget: {BUDGET}, remainder_sample: {SAMPLE}, round_pairs: 4}}"


@pytest.mark.parametrize("method", ["mtf", "fusion"])
def test_adaptive_budget_at_the_server_same_set_twice_and_no_unjudged_label(tmp_path, fake_llm, monkeypatch, method):
    store, stats, checks, _ = _build(tmp_path, "a", fake_llm, monkeypatch, _adaptive(method))
    judged = store.read_table("judged_set")
    assert (judged["role"] == "round").sum() == BUDGET and (judged["role"] == "sample").sum() == SAMPLE
    assert stats["distinct_requests"] == BUDGET + SAMPLE == stats["chat_calls"]  # max_retries 0: one call a pair

    pool = store.read_table("pooled_pairs").select("query_id", "chunk_id")
    keys = ["query_id", "chunk_id"]
    outcomes = store.read_table("judged_labels")
    unjudged = outcomes.filter(pl.col("status") == "unjudged")
    assert unjudged.height == pool.height - BUDGET - SAMPLE and unjudged["score"].is_null().all()
    assert unjudged.join(judged, on=keys, how="semi").is_empty()
    for table in ("judgments", LABEL_TABLE, "judging_failures"):  # no unjudged pair as a label anywhere
        assert unjudged.join(store.read_table(table), on=keys, how="semi").is_empty(), table
    labelled = store.read_table("judgments").height + store.read_table("judging_failures").height
    assert labelled == BUDGET + SAMPLE
    assert checks["every_pooled_pair_labelled_or_failed"].passed
    assert checks["every_pooled_pair_labelled_or_failed"].metadata["unjudged"].value == unjudged.height
    estimate = store.read_table("unjudged_estimate").filter(pl.col("scope") == "all")
    assert (estimate["unjudged_pairs"] == unjudged.height).all() and (estimate["sample_pairs"] <= SAMPLE).all()

    again, stats2, _, _ = _build(tmp_path, "b", fake_llm, monkeypatch, _adaptive(method))
    assert again.read_table("judged_set").equals(judged)  # same pool, settings and answers: same judged set
    assert stats2["distinct_requests"] == BUDGET + SAMPLE


def test_full_judges_every_pair_with_the_labels_of_a_direct_run(tmp_path, fake_llm, monkeypatch):
    store, _, checks, cfg = _build(tmp_path, "full", fake_llm, monkeypatch, "{shards: 4}")
    assert store.read_table("judged_set").is_empty()
    pool = store.read_table("pooled_pairs")
    outcomes = store.read_table("judged_labels")
    assert outcomes.height == pool.height and set(outcomes["status"]) <= {"labelled", "failed"}

    direct = Store(tmp_path / "direct.duckdb")  # today's path: judge_pairs on the whole pool, no strategy
    s = load_settings(str(cfg))
    with LLMResource(settings=SettingsResource(config_path=str(cfg))).client("judge") as client:
        run = judge_pairs(
            client,
            direct,
            pool,
            store.read_table("generated_queries"),
            stored_chunks(store, pool),
            output_model(s.llm.judge.reasoning),
        )
    label_cols = ["query_id", "chunk_id", "d1_topic", "d2_meaningful", "d3_actionable", "d4_density", "score"]
    today = run.outcomes.filter(pl.col("status") == "labelled").select(label_cols).sort("query_id", "chunk_id")
    assert store.read_table("judgments").select(label_cols).sort("query_id", "chunk_id").equals(today)
    estimate = store.read_table("unjudged_estimate").filter(pl.col("scope") == "all")
    assert (estimate["unjudged_pairs"] == 0).all()
