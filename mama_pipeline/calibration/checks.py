"""Invariants of the calibration assets."""

import dagster as dg
import polars as pl

from mama_pipeline.calibration._rater_agreement import ALL, JUDGE
from mama_pipeline.calibration._side_file import SCOPE_CATEGORIES


@dg.asset_check(
    asset="calibration_side_file_accounting",
    additional_ins={"meta_eval": dg.AssetIn("calibration_meta_eval"), "side_file": dg.AssetIn("calibration_side_file")},
    description="Every meta-evaluation row has exactly one outcome; kept counts match the side-file.",
)
def every_meta_eval_row_accounted(
    calibration_side_file_accounting: pl.DataFrame, meta_eval: pl.DataFrame, side_file: pl.DataFrame
) -> dg.AssetCheckResult:
    acc = calibration_side_file_accounting
    total = int(acc["rows"].sum())
    kept = dict(acc.filter(pl.col("outcome") == "kept").select("scope_category", "rows").iter_rows())
    in_file = dict(side_file.group_by("scope_category").len().iter_rows())
    mismatched = {
        c: (kept.get(c, 0), in_file.get(c, 0)) for c in SCOPE_CATEGORIES if kept.get(c, 0) != in_file.get(c, 0)
    }
    return dg.AssetCheckResult(
        passed=total == meta_eval.height and not mismatched,
        metadata={"meta_eval_rows": meta_eval.height, "accounted_rows": total, "kept_mismatch": str(mismatched)},
    )


@dg.asset_check(
    asset="calibration_judge_labels",
    additional_ins={"side_file": dg.AssetIn("calibration_side_file")},
    description="One label row per sampled side-file row; a label exactly when the call succeeded.",
)
def judge_labels_consistent(calibration_judge_labels: pl.DataFrame, side_file: pl.DataFrame) -> dg.AssetCheckResult:
    labels = calibration_judge_labels
    duplicated = labels.height - labels["upstream_line"].n_unique()
    unknown = labels.filter(~pl.col("upstream_line").is_in(side_file["upstream_line"].implode())).height
    mislabelled = labels.filter((pl.col("status") == "ok") != pl.col("criteria_met").is_not_null()).height
    failed = labels.filter(pl.col("status") != "ok").height
    return dg.AssetCheckResult(
        passed=duplicated == 0 and unknown == 0 and mislabelled == 0,
        metadata={
            "duplicated_rows": duplicated,
            "rows_not_in_side_file": unknown,
            "status_label_mismatch": mislabelled,
            "failed_calls": failed,
        },
    )


@dg.asset_check(
    asset="calibration_harness_report",
    additional_ins={"labels": dg.AssetIn("calibration_judge_labels")},
    description="The judge's overall figures cover exactly the rows it answered.",
)
def harness_covers_answered_rows(calibration_harness_report: pl.DataFrame, labels: pl.DataFrame) -> dg.AssetCheckResult:
    answered = labels.filter(pl.col("status") == "ok").height
    judge = calibration_harness_report.filter((pl.col("rater") == JUDGE) & (pl.col("scope_category") == ALL))
    reported = int(judge["rows"][0]) if judge.height else 0
    return dg.AssetCheckResult(
        passed=reported == answered,
        metadata={"answered_rows": answered, "reported_rows": reported},
    )
