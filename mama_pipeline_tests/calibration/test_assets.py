"""The calibration group materialised end to end on the fixture, with the fake LLM server as judge."""

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.calibration.definitions import build_defs as build_calibration_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.calibration.fixtures import EXPECTED_ACCOUNTING, META_EVAL_SAMPLE, VERDICTS
from mama_pipeline_tests.support.llm_stages import with_embedded

defs = build_calibration_defs(load_settings())

SAMPLE_SIZE = 30


@dg.asset(key="healthbench_scope_verdicts")
def stub_scope_verdicts() -> pl.DataFrame:
    """Stands in for mamabench's classification of HealthBench oss_eval."""
    return VERDICTS


@pytest.fixture
def config(tmp_path, fake_llm):
    path = tmp_path / "config.yaml"
    path.write_text(
        with_embedded(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "llm": {
                        "rubric_judge": {"base_urls": [fake_llm.url], "model": "fake-judge", "backoff_base_s": 0.01}
                    },
                    "calibration": {"meta_eval": {"path": str(META_EVAL_SAMPLE)}, "harness_sample_size": SAMPLE_SIZE},
                }
            )
        )
    )
    return path


def materialise(config) -> dg.ExecuteInProcessResult:
    assets = [stub_scope_verdicts, *defs.assets, *defs.asset_checks]
    return dg.materialize(
        assets, resources=shared_resources(str(config)), selection=dg.AssetSelection.all(), raise_on_error=True
    )


def test_group_materialises_and_checks_pass(config, tmp_path):
    result = materialise(config)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {
        "every_meta_eval_row_accounted",
        "judge_labels_consistent",
        "harness_covers_answered_rows",
    }
    assert all(c.passed for c in checks)

    store = Store(tmp_path / "data" / "mama.duckdb")
    side = store.read_table("calibration_side_file")
    assert side.height == 48 and set(side["scope_category"]) == {
        "MATERNAL",
        "CHILD_HEALTH",
        "SEXUAL_AND_REPRODUCTIVE_HEALTH",
    }
    assert side["prompt"].dtype == pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    assert store.read_table("calibration_side_file_accounting").rows() == EXPECTED_ACCOUNTING
    labels = store.read_table("calibration_judge_labels")
    assert labels.height == SAMPLE_SIZE and (labels["status"] == "ok").all()
    report = store.read_table("calibration_harness_report")
    judge = report.filter((pl.col("rater") == "judge") & (pl.col("scope_category") == "ALL")).row(0, named=True)
    assert judge["rows"] == SAMPLE_SIZE
    assert report.filter(pl.col("rater") == "physicians_pooled").height >= 1

    meta = result.asset_materializations_for_node("calibration_judge_labels")[0].metadata
    assert meta["rubric_judge/http_calls"].value == SAMPLE_SIZE
    assert meta["failed_calls"].value == 0


def test_rematerialising_unchanged_makes_no_llm_calls_and_same_tables(config, tmp_path):
    materialise(config)
    store = Store(tmp_path / "data" / "mama.duckdb")
    first = {t: store.read_table(t) for t in ("calibration_judge_labels", "calibration_harness_report")}
    result = materialise(config)
    meta = result.asset_materializations_for_node("calibration_judge_labels")[0].metadata
    assert meta["rubric_judge/http_calls"].value == 0
    assert meta["rubric_judge/cache_hits"].value == SAMPLE_SIZE
    assert first["calibration_harness_report"].equals(store.read_table("calibration_harness_report"))
    assert first["calibration_judge_labels"].equals(store.read_table("calibration_judge_labels"))
