"""Invariants of the systems assets (per partition where the asset is partitioned)."""

import dagster as dg
import polars as pl

from mama_pipeline.resources import SettingsResource, StoreResource
from mama_pipeline.systems._bounds import failure_stages, refusals
from mama_pipeline.systems._grading import GRADED
from mama_pipeline.systems._systems_prompts import SHORT_ANSWER_SCORES


def _partitions(context: dg.AssetCheckExecutionContext) -> list[str] | None:
    return [context.partition_key] if context.has_partition_key else None


@dg.asset_check(asset="system_answers", blocking=True)
def answers_cover_the_sample(
    context: dg.AssetCheckExecutionContext, settings: SettingsResource, store: StoreResource
) -> dg.AssetCheckResult:
    """One answer row per sampled item of each system's tracks; an answer exactly when the call succeeded."""
    db = store.get()
    items = db.read_table("systems_items")
    answers = db.read_table("system_answers", partitions=_partitions(context))
    cfg = settings.get().systems
    missing = duplicated = 0
    for name in answers["system"].unique().to_list():
        tracks = cfg.system(name).tracks if name in cfg.names else []
        want = items.filter(pl.col("track").is_in(tracks)).select("item_id")
        mine = answers.filter(pl.col("system") == name)
        missing += want.join(mine, on="item_id", how="anti").height
        duplicated += mine.height - mine["item_id"].n_unique()
    mismatched = answers.filter((pl.col("status") == "ok") != pl.col("answer").is_not_null()).height
    unexplained = answers.filter((pl.col("status") != "ok") & pl.col("error").is_null()).height
    return dg.AssetCheckResult(
        passed=missing == duplicated == mismatched == unexplained == 0,
        metadata={
            "answers": answers.height,
            "missing_items": missing,
            "duplicated_items": duplicated,
            "status_answer_mismatch": mismatched,
            "failures_without_reason": unexplained,
        },
    )


@dg.asset_check(asset="system_grades", blocking=True)
def grades_are_well_formed(
    context: dg.AssetCheckExecutionContext, settings: SettingsResource, store: StoreResource
) -> dg.AssetCheckResult:
    """Scores only for graded rows (or unanswered items under score_zero), in each track's range."""
    grades = store.get().read_table("system_grades", partitions=_partitions(context))
    score_zero = settings.get().systems.answer_failures == "score_zero"
    graded = pl.col("status") == GRADED
    unscored_grade = grades.filter(graded & pl.col("score").is_null()).height
    stray = grades.filter(~graded & pl.col("score").is_not_null() & (pl.lit(not score_zero) | (pl.col("score") != 0)))
    out_of_range = grades.filter(
        ((pl.col("track") == "mcq") & ~pl.col("score").is_in([0.0, 1.0]))
        | ((pl.col("track") == "short_answer") & ~pl.col("score").is_in(list(SHORT_ANSWER_SCORES.values())))
        | ((pl.col("track") == "rubric") & graded & (pl.col("score") > 1.0))
    ).height
    invalid_scored = grades.filter(pl.col("invalid").fill_null(False) & (pl.col("score") != 0)).height
    return dg.AssetCheckResult(
        passed=unscored_grade == stray.height == out_of_range == invalid_scored == 0,
        metadata={
            "grades": grades.height,
            "graded_without_score": unscored_grade,
            "failures_with_score": stray.height,
            "scores_out_of_range": out_of_range,
            "invalid_answers_scored": invalid_scored,
        },
    )


@dg.asset_check(
    asset="system_grades",
    blocking=True,
    description="Per track, the items the system left unanswered stay under its max_failure_rate and the answers "
    "its grader could not grade under the grader stage's; above either, the system's scoreboard rows and comparisons "
    "on that track are refused.",
)
def failures_under_bound(
    context: dg.AssetCheckExecutionContext, settings: SettingsResource, store: StoreResource
) -> dg.AssetCheckResult:
    grades = store.get().read_table("system_grades", partitions=_partitions(context))
    stages = failure_stages(grades, settings.get())
    over = refusals(stages)
    metadata = {k: v for found in stages.values() for f in found for k, v in f.metadata().items()}
    return dg.AssetCheckResult(
        passed=not over,
        metadata={**metadata, "summary": "; ".join(over.values()) or "every system and grader under its bound"},
    )


CHECKS = [answers_cover_the_sample, grades_are_well_formed, failures_under_bound]
