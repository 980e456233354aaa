"""HealthBench rubric score: met points (negatives included) over positive points; mean clipped."""

import polars as pl
import pytest

from mama_pipeline.calibration._rubric_score import rubric_score


def grades(rows):
    return pl.DataFrame(
        rows, schema={"example_id": pl.String, "points": pl.Int64, "criteria_met": pl.Boolean}, orient="row"
    )


EX1 = [("ex1", 5, True), ("ex1", 3, False), ("ex1", -4, True)]  # (5 - 4) / (5 + 3) = 0.125
EX2 = [("ex2", 2, True), ("ex2", -10, True)]  # (2 - 10) / 2 = -4.0, not clipped per example
EX3 = [("ex3", 6, True), ("ex3", 4, True), ("ex3", -2, False)]  # (6 + 4) / 10 = 1.0


def test_per_example_scores_keep_negative_points_unclipped():
    s = rubric_score(grades(EX1 + EX2 + EX3))
    scores = dict(s.examples.select("example_id", "score").iter_rows())
    assert scores == {"ex1": pytest.approx(0.125), "ex2": pytest.approx(-4.0), "ex3": pytest.approx(1.0)}
    assert s.examples["possible_points"].to_list() == [8, 2, 10]
    assert s.examples["achieved_points"].to_list() == [1, -8, 10]


def test_mean_is_clipped_to_unit_interval():
    # (0.125 - 4 + 1) / 3 = -0.958333 -> clipped to 0
    s = rubric_score(grades(EX1 + EX2 + EX3))
    assert s.unclipped_mean == pytest.approx(-2.875 / 3)
    assert s.overall == 0.0
    # (0.125 + 1) / 2 = 0.5625 inside [0, 1]: unchanged
    s = rubric_score(grades(EX1 + EX3))
    assert s.overall == pytest.approx(0.5625) == s.unclipped_mean


def test_unscorable_input_raises_naming_the_example():
    with pytest.raises(ValueError, match="no positive points.*ex4"):
        rubric_score(grades(EX1 + [("ex4", -3, False)]))
    with pytest.raises(ValueError, match="without a grade.*ex1"):
        rubric_score(grades([("ex1", 5, None)] + EX3))
    with pytest.raises(ValueError, match="missing column"):
        rubric_score(pl.DataFrame({"example_id": ["x"], "points": [1]}))
