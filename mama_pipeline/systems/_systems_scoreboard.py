"""The systems scoreboard: per system, track and segment, a mean with its bootstrap interval.

Segments: ``all``, each scope category (pre-scoped pools under ``PRESCOPED``)
and each source pool. mcq: accuracy; short answer: mean grade (1, 0.5, 0);
rubric: the mean of HealthBench example scores (not clipped: the per-item values
the paired comparisons use), with HealthBench's score (that mean clipped to
[0, 1]) beside it. Invalid answers (the system's own output that cannot be
graded) score 0 in every track. Side by side: the items left unanswered
(transport failures), the mean over answered items and the mean with unanswered
items as 0; ``answer_failures`` picks which of the two is ``mean`` with its
interval (BCa bootstrap over items, :func:`mama_pipeline.evaluation._significance.bootstrap_mean_ci`; where
it is refused, no other interval stands in: ``interval_refused`` says why).
A (system, track) over a failure bound (``systems.bounds``) keeps its counts and
its figures are refused, with the reason. Rubric rows carry the rubric grader's
agreement with physicians from the calibration harness, for the same scope
category (overall for ``all`` and pool rows).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.evaluation import StatisticRefused, bootstrap_mean_ci
from mama_pipeline.store.table_schema import table_schema
from mama_pipeline.systems._grading import ANSWER_FAILED, GRADE_FAILED, GRADED

SCOREBOARD_SCHEMA = table_schema("system_scoreboard")
MEASURE_OF_TRACK = {"mcq": "accuracy", "short_answer": "mean grade", "rubric": "mean example score"}
GRADER_FIGURES = ("rows", "macro_f1", "balanced_accuracy", "agree_on_met", "agree_on_not_met")


def interval_or_reason(
    values: np.ndarray, n_resamples: int, seed: int, confidence: float
) -> tuple[float | None, float | None, str | None]:
    """(low, high, None): the BCa interval of the mean over items; (None, None, reason) where it is refused."""
    try:
        return (*bootstrap_mean_ci(values, n_resamples, seed, confidence), None)
    except StatisticRefused as refused:
        return None, None, refused.reason


def bootstrap_ci(
    values: np.ndarray, n_resamples: int, seed: int, confidence: float
) -> tuple[float | None, float | None]:
    """The BCa interval of the mean over items, (None, None) where refused (:func:`interval_or_reason` says why)."""
    return interval_or_reason(values, n_resamples, seed, confidence)[:2]


def _segments(grades: pl.DataFrame) -> list[tuple[str, str, pl.DataFrame]]:
    out = [("all", "ALL", grades)]
    for kind, column in (("category", "category"), ("pool", "pool")):
        for value in sorted(grades[column].unique().to_list()):
            out.append((kind, value, grades.filter(pl.col(column) == value)))
    return out


def _grader(harness: pl.DataFrame | None, segment_kind: str, segment: str) -> dict[str, float | int | None]:
    empty = {f"grader_{f}": None for f in GRADER_FIGURES}
    if harness is None or harness.is_empty():
        return empty
    category = segment if segment_kind == "category" else "ALL"
    row = harness.filter((pl.col("rater") == "judge") & (pl.col("scope_category") == category))
    if row.is_empty():
        return empty
    r = row.row(0, named=True)
    return {f"grader_{f}": r[f] for f in GRADER_FIGURES}


def _figures(
    part: pl.DataFrame, track: str, answer_failures: str, n_resamples: int, seed: int, confidence: float
) -> dict[str, float | int | None]:
    part = part.sort("item_id")  # the declared order of the interval: item id
    answered = part.filter(pl.col("status") == GRADED)["score"].to_numpy().astype(float)
    with_zero = (
        part.filter(pl.col("status").is_in([GRADED, ANSWER_FAILED]))
        .select(pl.when(pl.col("status") == GRADED).then(pl.col("score")).otherwise(0.0))
        .to_series()
        .to_numpy()
        .astype(float)
    )  # unanswered items score 0 in their place
    headline = with_zero if answer_failures == "score_zero" else answered
    low, high, why = interval_or_reason(headline, n_resamples, seed, confidence)
    mean = float(headline.mean()) if headline.size else None
    return {
        "n_scored": int(headline.size),
        "mean": mean,
        "ci_low": low,
        "ci_high": high,
        "interval_refused": why,
        "mean_answered": float(answered.mean()) if answered.size else None,
        "mean_unanswered_as_0": float(with_zero.mean()) if with_zero.size else None,
        "healthbench_score": float(np.clip(mean, 0.0, 1.0)) if track == "rubric" and mean is not None else None,
    }


def scoreboard(
    grades: pl.DataFrame,
    harness: pl.DataFrame | None,
    n_resamples: int,
    seed: int,
    confidence: float,
    answer_failures: str = "exclude",
    refused: dict[tuple[str, str], str] | None = None,
) -> pl.DataFrame:
    """One row per (system, track, segment) present in the grades; figures of a refused (system, track) null."""
    refused = refused or {}
    rows = []
    for (system, track), block in sorted(grades.group_by("system", "track"), key=lambda kv: kv[0]):
        reason = refused.get((system, track))
        for kind, segment, part in _segments(block):
            if reason is None:
                figures = _figures(part, track, answer_failures, n_resamples, seed, confidence)
            else:  # counts only: no interval is computed for figures that are not shown
                figures = {"n_scored": part.filter(pl.col("score").is_not_null()).height}
            rows.append(
                {
                    "system": system,
                    "track": track,
                    "segment_kind": kind,
                    "segment": segment,
                    "n_items": part.height,
                    "n_unanswered": part.filter(pl.col("status") == ANSWER_FAILED).height,
                    "n_grade_failed": part.filter(pl.col("status") == GRADE_FAILED).height,
                    "n_invalid": int(part["invalid"].fill_null(False).sum()),
                    **figures,
                    "refused": reason,
                    **(
                        _grader(harness, kind, segment)
                        if track == "rubric"
                        else {f"grader_{f}": None for f in GRADER_FIGURES}
                    ),
                }
            )
    return pl.DataFrame(rows, schema=SCOREBOARD_SCHEMA)
