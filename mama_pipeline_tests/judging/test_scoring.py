"""Score = D1 x (D2 + D3 + D4), the gate and the structural rule, computed in code."""

import pytest

from mama_pipeline.judging._label_score import score_verdicts


def v(d1, d2, d3, d4):
    return {"d1_topic": d1, "d2_meaningful": d2, "d3_actionable": d3, "d4_density": d4}


@pytest.mark.parametrize("d2,d3,d4", [(2, 2, 2), (1, 1, 0), (2, 0, 1), (1, 2, 2), (0, 0, 0), (0, 0, 2)])
def test_score_is_sum_of_dimensions_when_on_topic(d2, d3, d4):
    label = score_verdicts(v(True, d2, d3, d4))
    assert label["score"] == d2 + d3 + d4
    assert (label["d2_meaningful"], label["d3_actionable"], label["d4_density"]) == (d2, d3, d4)
    assert label["structural_violation"] is False and label["d3_answered"] == d3


@pytest.mark.parametrize("d2,d3,d4", [(2, 2, 2), (0, 1, 1), (1, 0, 0)])
def test_gate_false_forces_zero_and_stops_scoring(d2, d3, d4):
    label = score_verdicts(v(False, d2, d3, d4))
    assert label["score"] == 0 and label["d1_topic"] is False
    assert label["d2_meaningful"] is label["d3_actionable"] is label["d4_density"] is label["d3_answered"] is None
    assert label["structural_violation"] is False


@pytest.mark.parametrize("d3,d4,expected", [(1, 0, 0), (2, 2, 2), (1, 1, 1)])
def test_structural_violation_is_flagged_and_d3_capped_to_zero(d3, d4, expected):
    label = score_verdicts(v(True, 0, d3, d4))
    assert label["structural_violation"] is True
    assert label["d3_answered"] == d3 and label["d3_actionable"] == 0
    assert label["score"] == expected


@pytest.mark.parametrize("bad", [v(True, 3, 0, 0), v(True, 1, -1, 0), v("yes", 1, 1, 1), v(True, 1.0, 1, 1)])
def test_out_of_range_verdicts_are_refused(bad):
    with pytest.raises(ValueError, match="out of range"):
        score_verdicts(bad)


def test_a_score_in_the_answer_is_ignored():
    label = score_verdicts({**v(True, 1, 0, 0), "score": 6})
    assert label["score"] == 1
