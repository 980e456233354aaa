"""Audits that cannot fool their reader: the reference judge is another judge, shards agree, failures gate.

The judging group runs in-process over the synthetic upstream assets against the
fault-injecting server; each test writes its own configuration.
"""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest

from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline_tests.judging import judging_defs
from mama_pipeline_tests.support.llm_stages import with_embedded

SHARDS = ["shard_000", "shard_001", "shard_002", "shard_003"]
UPSTREAM = [judging_defs.queries, judging_defs.chunks, judging_defs.pooled_pairs, judging_defs.audit_pool]
JUDGING = judging_defs.judging_area()
ASSETS = [*JUDGING.assets, *JUDGING.asset_checks, *UPSTREAM]


def write_config(
    tmp_path, judge: str, reference: str, judging: str = "shards: 4, pilot_size: 10", cross_model: str | None = None
) -> str:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            "llm:\n"
            f"  judge: {{{judge}}}\n"
            f"  reference_judge: {{{reference}}}\n"
            + (f"  cross_model_judge: {{{cross_model}}}\n" if cross_model else "")
            + f"judging: {{{judging}}}\n"
        )
    )
    return str(cfg)


def judge_everything(cfg: str) -> dg.ExecuteInProcessResult:
    resources = shared_resources(cfg)
    assert dg.materialize(UPSTREAM, resources=resources).success
    for key in SHARDS:
        assert dg.materialize(
            ASSETS, selection=dg.AssetSelection.assets("judged_labels"), partition_key=key, resources=resources
        ).success
    return dg.materialize(
        ASSETS,
        resources=resources,
        raise_on_error=False,
        selection=dg.AssetSelection.assets(
            "judgments",
            "judging_failures",
            "judge_pilot_sample",
            "reference_judgments",
            "judge_reliability",
            "judge_confusion",
        ),
    )


def calls(server) -> int:
    return server.stats()["chat_calls"]


@pytest.mark.parametrize("difference", ["seed: 1", "endpoint"])
def test_reference_with_the_same_model_name_but_another_endpoint_or_seed_asks_its_own_questions(
    tmp_path, fake_llm, difference
):
    judge = f"base_urls: [{fake_llm.url}], model: fake-judge"
    reference = judge + (", seed: 1" if difference == "seed: 1" else ", cache_namespace: another-server")
    cfg = write_config(tmp_path, judge, reference)
    before = calls(fake_llm)
    result = judge_everything(cfg)
    assert result.success
    store = Store(tmp_path / "data" / "mama.duckdb")
    pool = store.read_table("pooled_pairs")
    reference_rows = store.read_table("reference_judgments")
    assert reference_rows.height == 10 and (reference_rows["status"] == "labelled").all()
    assert not reference_rows["reused"].any(), "the reference judge reused the main judge's labels"
    assert calls(fake_llm) - before >= pool.height + 10  # every pooled pair, then the pilot again
    main_ids = set(store.read_table("judgments")["judge_identity"])
    assert len(main_ids) == 1 and main_ids.isdisjoint(set(reference_rows["judge_identity"]))
    reliability = store.read_table("judge_reliability")
    assert reliability["note"].is_null().all() and reliability["value"].is_not_null().any()
    # the judge's own model asked again is a test-retest, never called another judge
    assert set(reliability["audit"]) == {"self_consistency"} and set(reliability["reference_model"]) == {"fake-judge"}
    meta = result.asset_materializations_for_node("judge_reliability")[0].metadata
    assert meta["reference_judge/audit"].value == "self-consistency (test-retest)"
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["reference_is_another_judge"].passed


def test_self_consistency_and_cross_model_agreement_are_measured_side_by_side(tmp_path, fake_llm):
    judge = f"base_urls: [{fake_llm.url}], model: fake-judge"
    cfg = write_config(
        tmp_path, judge, judge + ", seed: 1", cross_model=f"base_urls: [{fake_llm.url}], model: fake-reference"
    )
    result = judge_everything(cfg)
    assert result.success
    store = Store(tmp_path / "data" / "mama.duckdb")
    rows = store.read_table("reference_judgments")
    assert rows.group_by("reference_stage", "reference_model").len().sort("reference_stage").rows() == [
        ("cross_model_judge", "fake-reference", 10),
        ("reference_judge", "fake-judge", 10),
    ]
    reliability = store.read_table("judge_reliability")
    audits = reliability.select("reference_stage", "audit", "reference_model").unique().sort("reference_stage")
    assert audits.rows() == [
        ("cross_model_judge", "cross_model", "fake-reference"),
        ("reference_judge", "self_consistency", "fake-judge"),
    ]
    assert reliability.filter(pl.col("metric") == "lenient_agreement")["pairs"].to_list() == [10, 10]
    confusion = store.read_table("judge_confusion")
    sums = {
        s: confusion.filter(pl.col("reference_stage") == s).select(pl.col("^ref_.*$")).to_numpy().sum()
        for s in ("reference_judge", "cross_model_judge")
    }
    assert sums == {"reference_judge": 10, "cross_model_judge": 10}
    asked = result.asset_materializations_for_node("reference_judgments")[0].metadata
    assert asked["http_calls"].value == 20  # 10 pilot pairs asked of each reference, each request counted once
    meta = result.asset_materializations_for_node("judge_reliability")[0].metadata
    assert meta["cross_model_judge/audit"].value == "cross-model agreement"
    assert meta["reference_judge/audit"].value == "self-consistency (test-retest)"
    assert {e.check_name: e for e in result.get_asset_check_evaluations()}["reference_is_another_judge"].passed


def test_a_cross_model_judge_on_the_judges_own_model_is_refused_in_one_line(tmp_path):
    from mama_pipeline.settings import ConfigError, load_settings

    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            "llm:\n  judge: {model: m1, base_urls: ['http://a:1/v1']}\n"
            "  cross_model_judge: {model: m1, base_urls: ['http://b:1/v1'], seed: 5}\n"
        )
    )
    with pytest.raises(ConfigError, match="cross_model_judge asks the judge's own model 'm1'") as err:
        load_settings(cfg)
    assert "\n" not in str(err.value).strip()


def test_identical_reference_judge_is_refused_by_a_blocking_check_and_the_report_says_why(tmp_path, fake_llm):
    judge = f"base_urls: [{fake_llm.url}], model: fake-judge, seed: 3"
    cfg = write_config(tmp_path, judge, judge)
    result = judge_everything(cfg)
    store = Store(tmp_path / "data" / "mama.duckdb")
    reference_rows = store.read_table("reference_judgments")
    assert reference_rows["reused"].all()  # the same judge: its own labels, nothing asked
    reliability = store.read_table("judge_reliability")
    assert reliability["value"].is_null().all(), "a judge compared with itself must not present agreement figures"
    note = reliability["note"].unique().to_list()
    assert len(note) == 1 and "not a reliability figure: the reference judge is the judge itself" in note[0]
    assert "fake-judge" in note[0]
    check = {e.check_name: e for e in result.get_asset_check_evaluations()}["reference_is_another_judge"]
    assert not check.passed and check.blocking
    assert "the reference judge is the judge itself" in check.metadata["reason"].value
    meta = result.asset_materializations_for_node("judge_reliability")[0].metadata
    assert meta["reference_judge/reference_is_the_judge"].value is True
    assert "judge itself" in meta["reference_judge/refused"].value


def test_shard_count_of_the_run_must_match_the_loaded_partitions(tmp_path, fake_llm):
    # the definitions loaded 4 shard partitions (the sample configuration); this run's file says 8
    cfg = write_config(
        tmp_path,
        f"base_urls: [{fake_llm.url}], model: fake-judge",
        f"base_urls: [{fake_llm.url}], model: fake-reference",
        judging="shards: 8",
    )
    resources = shared_resources(cfg)
    assert dg.materialize(UPSTREAM, resources=resources).success
    before = calls(fake_llm)
    result = dg.materialize(
        ASSETS,
        selection=dg.AssetSelection.assets("judged_labels"),
        partition_key="shard_000",
        resources=resources,
        raise_on_error=False,
    )
    assert not result.success and calls(fake_llm) == before
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.step_failure_data.error.to_string()
    assert "judging.shards is 8 in this run's configuration" in message and "loaded with 4 shard partitions" in message


def test_judge_failures_above_the_bound_block_the_labels_downstream(tmp_path, fake_llm):
    # chunk FAULTY_CHUNK always answers HTTP 500: its pooled pairs fail (a few percent of the pool)
    cfg = write_config(
        tmp_path,
        f"base_urls: [{fake_llm.url}], model: fake-judge, max_retries: 0, max_failure_rate: 0.0",
        f"base_urls: [{fake_llm.url}], model: fake-reference",
    )
    result = judge_everything(cfg)
    check = {e.check_name: e for e in result.get_asset_check_evaluations()}["failure_rate_under_bound"]
    assert not check.passed and check.blocking
    failed = Store(tmp_path / "data" / "mama.duckdb").read_table("judging_failures").height
    assert failed > 0 and check.metadata["judge/failed"].value == failed
    assert f"stage judge: {failed} of" in check.metadata["summary"].value
    # blocked: the pilot sample built on the labels was not materialised
    assert not result.asset_materializations_for_node("judge_pilot_sample")


def test_judge_server_outage_during_judging_fails_no_pair_and_the_run_log_records_it(tmp_path):
    from mama_pipeline_tests.foundation.test_endpoint_outage import outage_after
    from mama_pipeline_tests.support.fake_llm_server import running_server

    with running_server(delay=0.2) as server:
        judge = (
            f"base_urls: [{server.url}], model: fake-judge, concurrency: 2, max_retries: 0, "
            "backoff_base_s: 0.05, backoff_max_s: 0.5, endpoint_patience_s: 60"
        )
        cfg = write_config(tmp_path, judge, f"base_urls: [{server.url}], model: fake-reference")
        resources = shared_resources(cfg)
        assert dg.materialize(UPSTREAM, resources=resources).success
        pool = Store(tmp_path / "data" / "mama.duckdb").read_table("pooled_pairs")
        instance = dg.DagsterInstance.ephemeral()
        outage = outage_after(server, answered=4, down_s=3.0)
        result = dg.materialize(
            ASSETS,
            selection=dg.AssetSelection.assets("judged_labels"),
            partition_key="shard_000",
            resources=resources,
            instance=instance,
        )
        outage.join(30)
    assert result.success
    shard = Store(tmp_path / "data" / "mama.duckdb").read_table("judged_labels")
    assert shard.height > 8 and shard.height < pool.height
    failed = shard.filter(pl.col("status") == "failed")
    # max_retries is 0: only the chunk that always answers HTTP 500 may fail, never a pair caught by the outage
    assert failed["failure_reason"].str.contains("HTTP 500").all()
    assert not shard["failure_reason"].drop_nulls().str.contains("Connection|down").any()
    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any(f"endpoint {server.url} is down" in m for m in logs)
    back = [m for m in logs if f"endpoint {server.url} is up again after" in m]
    assert len(back) == 1 and float(back[0].split("after ")[1].split(" s")[0]) >= 2.5
    meta = result.asset_materializations_for_node("judged_labels")[0].metadata
    assert meta["judge/endpoint_outages"].value == 1


def test_the_old_judging_failure_bound_key_points_to_its_new_place(tmp_path):
    from mama_pipeline.settings import ConfigError, load_settings

    cfg = tmp_path / "old.yaml"
    cfg.write_text(with_embedded("judging: {max_failure_rate: 0.02}\n"))
    with pytest.raises(ConfigError, match="moved to llm.judge.max_failure_rate"):
        load_settings(cfg)
