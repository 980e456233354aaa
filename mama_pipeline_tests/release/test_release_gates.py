"""Invariants and failure bounds the release writers enforce."""

from __future__ import annotations

import re

import polars as pl
import pytest
import yaml

from mama_pipeline.llm.failure_bounds import (
    FailureBoundError,
    classifier_failures,
    judge_failures,
    query_writer_failures,
    refuse_over_bound,
)
from mama_pipeline.release._mamaretrieval import ReleaseError, write_mamaretrieval_release
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.llm_stages import with_embedded


@pytest.mark.parametrize("dim", ["d2_meaningful", "d3_actionable", "d4_density"])
def test_labels_with_dimensions_set_while_d1_is_false_are_refused_with_the_row_named(tmp_path, dim):
    j = fx.judgments()
    gated = j.filter(~pl.col("d1_topic")).row(0, named=True)
    bad = j.with_columns(
        pl.when((pl.col("query_id") == gated["query_id"]) & (pl.col("chunk_id") == gated["chunk_id"]))
        .then(pl.lit(1, pl.Int8))
        .otherwise(pl.col(dim))
        .alias(dim)
    )
    with pytest.raises(ReleaseError) as err:
        write_mamaretrieval_release(tmp_path / "r", fx.inputs(judgments=bad))
    msg = str(err.value)
    assert "1 label(s) set D2..D4 while D1 is false" in msg and f"{dim}=1" in msg
    assert f"query_id={gated['query_id']}, chunk_id={gated['chunk_id']}" in msg
    assert not (tmp_path / "r").exists()
    write_mamaretrieval_release(tmp_path / "ok", fx.inputs(judgments=j))  # the gated labels as the judge writes them


def test_labels_of_two_judge_identities_are_refused(tmp_path):
    j = fx.judgments().with_columns(judge_identity=pl.lit("aaaa"))
    write_mamaretrieval_release(tmp_path / "one", fx.inputs(judgments=j))
    mixed = j.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit("bbbb"))
        .otherwise(pl.col("judge_identity"))
        .alias("judge_identity")
    )
    with pytest.raises(ReleaseError, match=r"judgments come from 2 judge identities \['aaaa', 'bbbb'\]"):
        write_mamaretrieval_release(tmp_path / "two", fx.inputs(judgments=mixed))


def test_the_benchmark_synthetic_judgments_respect_the_d1_gate(tmp_path):
    from mama_pipeline_tests.support.synthetic_release import synthetic_inputs

    inputs = synthetic_inputs(0.01)
    write_mamaretrieval_release(tmp_path / "bench", inputs)
    gated = inputs.judgments.filter(~pl.col("d1_topic"))
    assert gated.height and gated.select(pl.col("d2_meaningful", "d3_actionable", "d4_density").is_null().all()).row(
        0
    ) == (True, True, True)


def test_stage_failure_counts_and_refusal_name_the_stage_and_the_counts():
    pool = pl.DataFrame({"query_id": ["q1", "q1", "q2", "q2"], "chunk_id": ["a", "b", "a", "c"]})
    labelled = pool.head(3)
    judge = judge_failures(pool, labelled, bound=0.2)
    assert (judge.failed, judge.total, judge.over) == (1, 4, True)
    writer = query_writer_failures(pl.DataFrame({"status": ["kept", "llm_failed", "not_answerable", "kept"]}), 0.5)
    assert (writer.failed, writer.total, writer.over) == (1, 4, False)
    verdicts = pl.DataFrame({"via": ["classifier", "classifier", "oss_eval"], "status": ["ok", "parse_failed", "x"]})
    classifier = classifier_failures(verdicts, 0.5)
    assert (classifier.failed, classifier.total, classifier.over) == (1, 2, False)
    refuse_over_bound("mamaretrieval", "1.0", [writer, classifier])  # at or under their bounds: no refusal
    with pytest.raises(FailureBoundError) as err:
        refuse_over_bound("mamaretrieval", "1.0", [writer, judge])
    assert str(err.value).startswith(
        "release mamaretrieval 1.0 refused: stage judge: 1 of 4 pooled pairs failed "
        "(25.00%), bound 20.00% (llm.judge.max_failure_rate)"
    )
    assert "query_writer" not in str(err.value)


def run_release(tmp_path, monkeypatch, bound: float, gate_failed: int = 0, note: str | None = None):
    import dagster as dg

    from mama_pipeline.release.assets import mamaretrieval_release
    from mama_pipeline.resources import shared_resources
    from mama_pipeline.store import Store
    from mama_pipeline_tests.release.test_assets import UPSTREAM, setup_store

    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup_store(tmp_path, True)
    raw = yaml.safe_load(config.read_text())
    assert raw["llm"]["query_writer"]["base_urls"] == ["http://writer:8000/v1"]
    raw["llm"]["query_writer"]["max_failure_rate"] = bound
    config.write_text(yaml.safe_dump(raw))
    store = Store(tmp_path / "data" / "mama.duckdb")
    store.write_table("query_gate_decisions", fx.gate_decisions(failed=gate_failed))
    store.write_table("judge_reliability", fx.reliability(note))
    with dg.instance_for_test() as instance:
        return dg.materialize(
            [*UPSTREAM, mamaretrieval_release],
            resources=shared_resources(str(config)),
            instance=instance,
            selection=[mamaretrieval_release.key],
            raise_on_error=False,
        )


def test_release_refuses_to_build_above_a_stage_failure_bound_naming_the_stage_and_counts(tmp_path, monkeypatch):
    result = run_release(tmp_path, monkeypatch, bound=0.2, gate_failed=1)  # 1 of 3 sampled chunks: 33% > 20%
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error.to_string()
    assert (
        "release mamaretrieval 0.3.0 refused: stage query_writer: 1 of 3 sampled chunks failed (33.33%), "
        "bound 20.00% (llm.query_writer.max_failure_rate)"
    ) in error
    assert not (tmp_path / "data" / "releases").exists()


def test_release_at_or_under_the_bound_builds_and_its_card_states_the_reliability(tmp_path, monkeypatch):
    import json

    result = run_release(tmp_path, monkeypatch, bound=0.5, gate_failed=1)
    assert result.success
    folder = tmp_path / "data" / "releases" / "mamaretrieval" / "0.3.0"
    manifest = json.loads((folder / "manifest.json").read_text())
    [audit] = manifest["judge_reliability"]
    assert audit["figures"]["lenient_agreement"] == 0.75 and audit["refused"] is None
    # the reference ran the judge's own model: a test-retest, with the reference's decoding stated
    assert (audit["audit"], audit["reference_judge"]) == ("self_consistency", "judge-test")
    assert audit["decoding"] == "temperature 0.0, seed 0"
    card = (folder / "README.md").read_text()
    assert "### Judge reliability" in card and "| lenient_agreement | 0.75 |" in card
    assert (
        "- **Self-consistency (test-retest)** on a pilot sample of 4 pairs: the judge's own model `judge-test` "
        "asked again (temperature 0.0, seed 0)"
    ) in card
    assert (
        "| measure | self-consistency (test-retest): judge-test |" in card and "different reference judge" not in card
    )
    meta = result.asset_materializations_for_node("mamaretrieval_release")[0].metadata
    assert meta["query_writer/failed"].value == 1 and meta["judge/failed"].value == 0


def test_a_refused_reliability_figure_is_stated_on_the_card(tmp_path, monkeypatch):
    note = "not a reliability figure: the reference judge is the judge itself (model m, identity i)"
    assert run_release(tmp_path, monkeypatch, bound=0.5, note=note).success
    folder = tmp_path / "data" / "releases" / "mamaretrieval" / "0.3.0"
    card = (folder / "README.md").read_text()
    assert f"**No figure.** {note}" in card and "lenient_agreement" not in card


def test_mamabench_classifier_failures_above_the_bound_block_and_the_release_refuses(tmp_path):
    import dagster as dg
    import yaml

    from mama_pipeline.mamabench.definitions import build_defs as build_mamabench_defs
    from mama_pipeline.release.assets import mamabench_release
    from mama_pipeline.resources import shared_resources
    from mama_pipeline.settings import load_settings
    from mama_pipeline_tests.mamabench.helpers import PACKAGE
    from mama_pipeline_tests.mamabench.test_assets import stub_side_file
    from mama_pipeline_tests.support.fake_llm_server import running_server

    (tmp_path / "sample_data").symlink_to(PACKAGE / "sample_data")
    config = tmp_path / "config.yaml"
    with running_server(fault_rate=0.3) as server:  # 30% of first attempts fault; no retries: they fail
        strict = {"base_urls": [server.url], "max_retries": 0, "parse_retries": 0, "max_failure_rate": 0.05}
        config.write_text(
            with_embedded(
                yaml.safe_dump(
                    {
                        "data_dir": str(tmp_path / "data"),
                        "llm": {
                            "classifier": {**strict, "model": "fake-classifier"},
                            "classifier_reference": {**strict, "model": "fake-reference", "max_failure_rate": 1.0},
                        },
                        "mamabench": {"agreement_sample_size": 10},
                    }
                )
            )
        )
        defs = build_mamabench_defs(load_settings())
        assets = [stub_side_file, *defs.assets, mamabench_release, *defs.asset_checks]
        resources = shared_resources(str(config))
        result = dg.materialize(assets, resources=resources, raise_on_error=False)
        check = {e.check_name: e for e in result.get_asset_check_evaluations()}["classifier_failure_rate_under_bound"]
        assert not check.passed and check.blocking and check.metadata["classifier/failed"].value > 0
        assert not result.asset_materializations_for_node("mamabench_release")  # blocked
        # a run without the checks: the release refuses by itself (transport failures were asked again and
        # answered; the cached parse failures remain, still above the bound)
        alone = dg.materialize(
            assets, resources=resources, raise_on_error=False, selection=dg.AssetSelection.all().without_checks()
        )
    assert not alone.success
    (failure,) = alone.get_step_failure_events()
    assert failure.step_key == "mamabench_release"
    error = failure.step_failure_data.error.to_string()
    total = check.metadata["classifier/items"].value
    match = re.search(
        rf"release mamabench 0.0.0-sample refused: stage classifier: (\d+) of {total} items failed", error
    )
    assert match and int(match.group(1)) > 0.05 * total
    assert "classifier_reference" not in error  # under its own bound
    assert not (tmp_path / "data" / "releases" / "mamabench").exists()
