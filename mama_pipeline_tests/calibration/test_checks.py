"""The calibration asset checks fail when their invariant is broken."""

import polars as pl
import pytest

from mama_pipeline.calibration._meta_eval import read_meta_eval
from mama_pipeline.calibration._rater_agreement import harness_report
from mama_pipeline.calibration._rubric_judge import LABEL_SCHEMA, judged_rows
from mama_pipeline.calibration._side_file import build_side_file
from mama_pipeline.calibration.checks import (
    every_meta_eval_row_accounted,
    harness_covers_answered_rows,
    judge_labels_consistent,
)
from mama_pipeline_tests.calibration.fixtures import META_EVAL_SAMPLE, VERDICTS


@pytest.fixture(scope="module")
def inputs():
    meta = read_meta_eval(META_EVAL_SAMPLE)
    return meta, build_side_file(meta, VERDICTS)


def labels_for(side_file: pl.DataFrame, statuses: list[str], met: list) -> pl.DataFrame:
    n = len(statuses)
    rows = side_file.head(n)
    return pl.DataFrame(
        {
            "upstream_line": rows["upstream_line"],
            "prompt_id": rows["prompt_id"],
            "completion_id": rows["completion_id"],
            "scope_category": rows["scope_category"],
            "status": statuses,
            "criteria_met": met,
            "explanation": ["e" if m is not None else None for m in met],
            "error": [None if s == "ok" else "boom" for s in statuses],
        },
        schema=LABEL_SCHEMA,
    )


def test_accounting_check(inputs):
    meta, side = inputs
    ok = every_meta_eval_row_accounted(
        calibration_side_file_accounting=side.accounting, meta_eval=meta, side_file=side.rows
    )
    assert ok.passed
    lost = every_meta_eval_row_accounted(
        calibration_side_file_accounting=side.accounting, meta_eval=meta, side_file=side.rows.head(40)
    )
    assert not lost.passed
    extra = every_meta_eval_row_accounted(
        calibration_side_file_accounting=side.accounting, meta_eval=meta.head(71), side_file=side.rows
    )
    assert not extra.passed


def test_labels_check(inputs):
    _, side = inputs
    good = labels_for(side.rows, ["ok", "parse_failed", "ok"], [True, None, False])
    result = judge_labels_consistent(calibration_judge_labels=good, side_file=side.rows)
    assert result.passed and result.metadata["failed_calls"].value == 1
    failure_with_label = labels_for(side.rows, ["ok", "parse_failed"], [True, False])
    assert not judge_labels_consistent(calibration_judge_labels=failure_with_label, side_file=side.rows).passed
    twice = pl.concat([good, good.head(1)])
    assert not judge_labels_consistent(calibration_judge_labels=twice, side_file=side.rows).passed


def test_report_check(inputs):
    _, side = inputs
    labels = labels_for(side.rows, ["ok", "transport_failed", "ok"], [True, None, True])
    report = harness_report(judged_rows(side.rows, labels), [])
    assert harness_covers_answered_rows(calibration_harness_report=report, labels=labels).passed
    stale = harness_report(judged_rows(side.rows, labels.head(1)), [])
    assert not harness_covers_answered_rows(calibration_harness_report=stale, labels=labels).passed


def test_empty_side_file_gives_empty_report_that_passes(inputs):
    _, side = inputs
    labels = labels_for(side.rows, [], [])
    report = harness_report(judged_rows(side.rows.head(0), labels), ["MATERNAL"])
    assert report.is_empty()
    assert harness_covers_answered_rows(calibration_harness_report=report, labels=labels).passed
