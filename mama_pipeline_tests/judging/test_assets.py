"""The judging group end to end: shards in parallel Dagster processes, then gather, checks and audits."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline_tests.judging import judging_defs
from mama_pipeline_tests.support.llm_stages import with_embedded

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
DAGSTER = str(Path(sys.executable).with_name("dagster"))
MODULE = "mama_pipeline_tests.judging.judging_defs"
SHARDS = ["shard_000", "shard_001", "shard_002", "shard_003"]


def dagster_cli(args, env):
    return subprocess.Popen(
        [DAGSTER, "asset", "materialize", "-m", MODULE, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_judging_group_end_to_end(tmp_path, fake_llm, monkeypatch):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            "llm:\n"
            f"  judge: {{base_urls: [{fake_llm.url}], model: fake-judge, max_retries: 1, backoff_base_s: 0.01, max_failure_rate: 0.2}}\n"
            f"  reference_judge: {{base_urls: [{fake_llm.url}], model: fake-reference}}\n"
            "judging: {shards: 4, pilot_size: 20}\n"
        )
    )
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "MAMA_CONFIG": str(cfg)}
    env.pop("MAMA_DATA_DIR", None)
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)

    resources = shared_resources(str(cfg))
    upstream = [judging_defs.queries, judging_defs.chunks, judging_defs.pooled_pairs, judging_defs.audit_pool]
    assert dg.materialize(upstream, resources=resources).success
    # create the instance's storage once, before processes race to create it
    subprocess.run([DAGSTER, "instance", "migrate"], env=env, check=True, capture_output=True, timeout=300)
    procs = [dagster_cli(["--select", "judged_labels", "--partition", key], env) for key in SHARDS]
    for p in procs:
        assert p.wait(300) == 0, p.stderr.read()[-3000:]

    store = Store(tmp_path / "data" / "mama.duckdb")
    pool = store.read_table("pooled_pairs")
    shards = store.query("select _partition, count(*) n from judged_labels group by 1 order by 1")
    assert shards["_partition"].to_list() == SHARDS and shards["n"].sum() == pool.height

    downstream = [
        "judgments",
        "judging_failures",
        "orphaned_judgments",
        "judge_pilot_sample",
        "reference_judgments",
        "judge_reliability",
        "judge_confusion",
        "audit_judgments",
        "pool_completeness",
    ]
    result = dg.materialize(
        [*(area := judging_defs.judging_area()).assets, *area.asset_checks, *upstream],
        selection=dg.AssetSelection.assets(*downstream),
        resources=resources,
    )
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(checks) == {
        "every_pooled_pair_labelled_or_failed",
        "failure_rate_under_bound",
        "structural_rule",
        "reference_is_another_judge",
        "score_distribution_per_tier",
    }
    assert all(e.passed for e in checks.values()), {k: (e.passed, e.metadata) for k, e in checks.items()}
    loaded = {
        (e.step_key, e.event_specific_data.input_name)
        for e in result.all_events
        if e.event_type_value == "LOADED_INPUT"
    }
    label_checks = ("every_pooled_pair", "failure_rate_under_bound", "structural_rule", "score_distribution_per_tier")
    assert not {step for step, name in loaded if name == "judgments" and step.endswith(label_checks)}  # store reads

    faulty = store.read_table("corpus_chunks")["chunk_id"][judging_defs.FAULTY_CHUNK]
    failures = store.read_table("judging_failures")
    judgments = store.read_table("judgments")
    assert set(failures["chunk_id"]) == {faulty} and failures["failure_reason"].str.contains("HTTP 500").all()
    assert judgments.height + failures.height == pool.height
    coverage = {k: v.value for k, v in checks["every_pooled_pair_labelled_or_failed"].metadata.items()}
    assert (coverage["pooled_pairs"], coverage["missing"], coverage["failed"]) == (pool.height, 0, 2)  # 2 pairs
    assert coverage["labelled"] == judgments.height == pool.height - 2  # of the faulty chunk failed
    assert set(judgments["judge_model"]) == {"fake-judge"}

    reliability = dict(store.read_table("judge_reliability").select("metric", "value").iter_rows())
    assert 0 <= reliability["lenient_agreement"] <= 1 and store.read_table("judge_pilot_sample").height == 20
    assert store.read_table("judge_confusion").select(pl.col("^ref_.*$")).to_numpy().sum() == 20
    audit = store.read_table("audit_judgments")
    assert audit.filter(pl.col("status") == "labelled")["reused"].sum() > 0  # main-pool labels reused
    recall = store.read_table("pool_completeness").filter(pl.col("scope") == "all")
    assert (
        set(recall["cut"]) == {"lenient", "strict"}
        and ((recall["recall_micro"] <= 1) | recall["recall_micro"].is_null()).all()
    )
    # audit holes were judged: every audit pair not in the main pool has a label or a failure
    assert audit.height == store.read_table("audit_pool").height
