"""HealthBench rubric score of graded answers.

Per example: the points of the criteria met (negative points included) over the
sum of the example's positive points; not clipped, so an example can score below
0. Overall: the mean of the example scores, clipped to [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

GRADES_COLUMNS = ("example_id", "points", "criteria_met")


@dataclass(frozen=True)
class RubricScore:
    overall: float  # mean of example scores clipped to [0, 1]
    unclipped_mean: float
    examples: pl.DataFrame  # example_id, achieved_points, possible_points, score


def rubric_score(grades: pl.DataFrame) -> RubricScore:
    """Score graded criteria: one row per (example_id, criterion) with points and criteria_met.

    A criterion that was not graded (null criteria_met) or an example with no
    positive points cannot be scored and raises, naming the example.
    """
    missing = [c for c in GRADES_COLUMNS if c not in grades.columns]
    if missing:
        raise ValueError(f"grades: missing column(s) {missing}")
    if grades.is_empty():
        raise ValueError("grades: no rows to score")
    ungraded = grades.filter(pl.col("criteria_met").is_null())["example_id"].unique().sort()
    if len(ungraded):
        raise ValueError(f"grades: criteria without a grade in example(s) {ungraded.head(5).to_list()}")
    examples = (
        grades.group_by("example_id")
        .agg(
            pl.col("points").filter(pl.col("criteria_met")).sum().alias("achieved_points"),
            pl.col("points").filter(pl.col("points") > 0).sum().alias("possible_points"),
        )
        .sort("example_id")
    )
    unscorable = examples.filter(pl.col("possible_points") <= 0)["example_id"]
    if len(unscorable):
        raise ValueError(f"grades: example(s) with no positive points: {unscorable.head(5).to_list()}")
    examples = examples.with_columns((pl.col("achieved_points") / pl.col("possible_points")).alias("score"))
    mean = float(examples["score"].mean())
    return RubricScore(overall=float(np.clip(mean, 0.0, 1.0)), unclipped_mean=mean, examples=examples)
