"""The systems scoreboard: per system, track and segment, a mean with its bootstrap interval.

Segments: ``all``, each scope category (pre-scoped pools under ``PRESCOPED``)
and each source pool. mcq: accuracy (invalid answers count as wrong); short
answer: mean grade (1, 0.5, 0); rubric: HealthBench's score, the mean of
example scores clipped to [0, 1]. Intervals are scipy's BCa bootstrap over
items (percentile where BCa is undefined). Rubric rows carry the rubric
grader's agreement with physicians from the calibration harness, for the same
scope category (overall for ``all`` and pool rows).
"""
from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.evaluation.significance import compact
from mama_pipeline.systems.grading import ANSWER_FAILED, GRADE_FAILED

SCOREBOARD_SCHEMA = {
    "system": pl.String, "track": pl.String, "segment_kind": pl.String, "segment": pl.String,
    "n_items": pl.Int64, "n_scored": pl.Int64, "n_answer_failed": pl.Int64, "n_grade_failed": pl.Int64,
    "n_invalid": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "unclipped_mean": pl.Float64, "grader_rows": pl.Int64, "grader_macro_f1": pl.Float64,
    "grader_balanced_accuracy": pl.Float64, "grader_agree_on_met": pl.Float64, "grader_agree_on_not_met": pl.Float64,
}
MEASURE_OF_TRACK = {"mcq": "accuracy", "short_answer": "mean grade", "rubric": "HealthBench score"}
BATCH = 1000  # resamples (and jackknife samples) per vectorised call: bounds memory at any item count
GRADER_FIGURES = ("rows", "macro_f1", "balanced_accuracy", "agree_on_met", "agree_on_not_met")


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _clipped_mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.clip(np.mean(x, axis=axis), 0.0, 1.0)


def statistic_of(track: str):
    return _clipped_mean if track == "rubric" else _mean


def bootstrap_ci(values: np.ndarray, track: str, n_resamples: int, seed: int,
                 confidence: float) -> tuple[float | None, float | None]:
    """Bootstrap interval of the track's statistic over items; a point when the values do not vary."""
    if values.size == 0:
        return None, None
    stat = statistic_of(track)
    if np.all(values == values[0]):
        point = float(stat(values))
        return point, point
    from scipy import stats

    for method in ("BCa", "percentile"):
        res = stats.bootstrap((compact(values),), stat, vectorized=True, n_resamples=n_resamples,
                              confidence_level=confidence, method=method, batch=BATCH,
                              rng=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.isfinite(low) and np.isfinite(high):
            return low, high
    return None, None


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


def scoreboard(grades: pl.DataFrame, harness: pl.DataFrame | None, n_resamples: int, seed: int,
               confidence: float) -> pl.DataFrame:
    """One row per (system, track, segment) present in the grades."""
    rows = []
    for (system, track), block in sorted(grades.group_by("system", "track"), key=lambda kv: kv[0]):
        for kind, segment, part in _segments(block):
            scored = part.filter(pl.col("score").is_not_null())["score"].to_numpy().astype(float)
            low, high = bootstrap_ci(scored, track, n_resamples, seed, confidence)
            rows.append({
                "system": system, "track": track, "segment_kind": kind, "segment": segment,
                "n_items": part.height, "n_scored": int(scored.size),
                "n_answer_failed": part.filter(pl.col("status") == ANSWER_FAILED).height,
                "n_grade_failed": part.filter(pl.col("status") == GRADE_FAILED).height,
                "n_invalid": int(part["invalid"].fill_null(False).sum()),
                "mean": float(statistic_of(track)(scored)) if scored.size else None,
                "ci_low": low, "ci_high": high,
                "unclipped_mean": float(scored.mean()) if scored.size else None,
                **(_grader(harness, kind, segment) if track == "rubric" else {f"grader_{f}": None for f in GRADER_FIGURES}),
            })
    return pl.DataFrame(rows, schema=SCOREBOARD_SCHEMA)
