"""The side-file keeps every native field, adds the scope category, and accounts for every row."""

import polars as pl
import pytest

from mama_pipeline.calibration._meta_eval import read_meta_eval
from mama_pipeline.calibration._side_file import ACCOUNTING_SCHEMA, build_side_file
from mama_pipeline_tests.calibration.fixtures import EXPECTED_ACCOUNTING, META_EVAL_SAMPLE, VERDICTS


@pytest.fixture(scope="module")
def meta_eval() -> pl.DataFrame:
    return read_meta_eval(META_EVAL_SAMPLE)


def test_counts_per_category_and_outcome(meta_eval):
    side = build_side_file(meta_eval, VERDICTS)
    assert side.accounting.schema == pl.Schema(ACCOUNTING_SCHEMA)
    assert side.accounting.rows() == EXPECTED_ACCOUNTING
    assert side.accounting["rows"].sum() == meta_eval.height
    assert dict(side.rows.group_by("scope_category").len().iter_rows()) == {
        "MATERNAL": 32,
        "CHILD_HEALTH": 12,
        "SEXUAL_AND_REPRODUCTIVE_HEALTH": 4,
    }


def test_every_native_field_is_kept_unchanged(meta_eval):
    side = build_side_file(meta_eval, VERDICTS)
    assert side.rows.columns == [*meta_eval.columns, "scope_category"]
    kept = meta_eval.filter(pl.col("upstream_line").is_in(side.rows["upstream_line"].implode()))
    assert side.rows.drop("scope_category").equals(kept)
    category = dict(VERDICTS.iter_rows())
    assert all(category[p] == c for p, c in side.rows.select("prompt_id", "scope_category").iter_rows())


def test_same_inputs_give_identical_output(meta_eval):
    a = build_side_file(meta_eval, VERDICTS)
    b = build_side_file(meta_eval.reverse(), VERDICTS.reverse())
    assert a.rows.equals(b.rows) and a.accounting.equals(b.accounting)


def test_verdicts_with_extra_columns_or_repeated_rows_are_accepted(meta_eval):
    extra = VERDICTS.with_columns(pl.lit("why").alias("rationale"), pl.lit("healthbench_oss_eval").alias("pool"))
    assert build_side_file(meta_eval, extra).accounting.rows() == EXPECTED_ACCOUNTING
    # the same prompt listed by oss_eval and consensus with the same verdict counts once
    repeated = pl.concat([VERDICTS, VERDICTS.head(3)])
    assert build_side_file(meta_eval, repeated).accounting.rows() == EXPECTED_ACCOUNTING


@pytest.mark.parametrize(
    "verdicts, reason",
    [
        (VERDICTS.rename({"category": "label"}), r"missing column\(s\) \['category'\]"),
        (
            pl.concat([VERDICTS, VERDICTS.head(1).with_columns(pl.lit("NONE").alias("category"))]),
            "conflicting verdicts.*e6fe887a",
        ),
        (VERDICTS.with_columns(pl.lit("PREGNANCY").alias("category")), "unknown category.*PREGNANCY"),
        (VERDICTS.with_columns(pl.lit(None, pl.String).alias("prompt_id")), "null prompt_id"),
    ],
)
def test_bad_verdicts_are_refused(meta_eval, verdicts, reason):
    with pytest.raises(ValueError, match=reason):
        build_side_file(meta_eval, verdicts)
