"""Calibration metrics on a hand-made set; every expected figure is worked out by hand below."""

import polars as pl
import pytest

from mama_pipeline.calibration._rater_agreement import ALL, JUDGE, PHYSICIANS_POOLED, agreement, harness_report

# Five rows, physicians a, b, c (MA = MATERNAL, CH = CHILD_HEALTH):
#   row  cat  judge  physicians
#   r1   MA   T      a=T b=T c=T
#   r2   MA   T      a=T b=F
#   r3   MA   F      a=F b=F c=T
#   r4   CH   F      a=F c=F
#   r5   CH   T      b=F c=F
JUDGED = pl.DataFrame(
    {
        "upstream_line": [1, 2, 3, 4, 5],
        "scope_category": ["MATERNAL"] * 3 + ["CHILD_HEALTH"] * 2,
        "criteria_met": [True, True, False, False, True],
        "binary_labels": [[True, True, True], [True, False], [False, False, True], [False, False], [False, False]],
        "anonymized_physician_ids": [["a", "b", "c"], ["a", "b"], ["a", "b", "c"], ["a", "c"], ["b", "c"]],
    }
)


def figures(report: pl.DataFrame, rater: str, category: str) -> dict:
    rows = report.filter((pl.col("rater") == rater) & (pl.col("scope_category") == category)).to_dicts()
    assert len(rows) == 1, (rater, category)
    return rows[0]


@pytest.fixture(scope="module")
def report() -> pl.DataFrame:
    return harness_report(JUDGED, ["MATERNAL", "NEONATAL", "CHILD_HEALTH"])


def test_judge_overall(report):
    # (judge, physician) pairs: r1 TT TT TT | r2 TT TF | r3 FF FF FT | r4 FF FF | r5 TF TF -> 12 pairs
    # physician MET pairs: r1 x3, r2a, r3c = 5; judge MET on 4 (all but r3c) -> 4/5
    # physician NOT-MET pairs: r2b, r3a, r3b, r4a, r4c, r5b, r5c = 7; judge NOT-MET on r3a r3b r4a r4c -> 4/7
    # TP=4 FN=1 FP=3 TN=4; F1(MET)=2*4/(8+3+1)=2/3; F1(NOT)=2*4/(8+1+3)=2/3 -> macro-F1 2/3
    # balanced accuracy = (4/5 + 4/7)/2 = 24/35
    # met-rates: judge 3/5 rows; physicians 5/12 labels
    # consensus rows (>=2 physicians, all equal): r1 (T), r4 (F), r5 (F); judge agrees on r1, r4 -> 2/3
    f = figures(report, JUDGE, ALL)
    assert (f["rows"], f["pairs"], f["met_pairs"], f["not_met_pairs"], f["consensus_rows"]) == (5, 12, 5, 7, 3)
    assert f["met_rate"] == pytest.approx(3 / 5)
    assert f["reference_met_rate"] == pytest.approx(5 / 12)
    assert f["agree_on_met"] == pytest.approx(4 / 5)
    assert f["agree_on_not_met"] == pytest.approx(4 / 7)
    assert f["consensus_agreement"] == pytest.approx(2 / 3)
    assert f["macro_f1"] == pytest.approx(2 / 3)
    assert f["balanced_accuracy"] == pytest.approx(24 / 35)


def test_judge_per_category(report):
    # MATERNAL (r1-r3): 8 pairs; MET pairs r1 x3, r2a, r3c = 5, judge MET on 4 -> 4/5;
    # NOT-MET pairs r2b, r3a, r3b = 3, judge NOT-MET on 2 -> 2/3; TP=4 FN=1 FP=1 TN=2
    # F1(MET)=8/10=0.8, F1(NOT)=4/6=2/3 -> macro 11/15; balanced (4/5+2/3)/2 = 11/15
    # met-rates judge 2/3, physicians 5/8; consensus: r1 only, agreed -> 1.0
    m = figures(report, JUDGE, "MATERNAL")
    assert (m["rows"], m["pairs"], m["consensus_rows"]) == (3, 8, 1)
    assert m["met_rate"] == pytest.approx(2 / 3)
    assert m["reference_met_rate"] == pytest.approx(5 / 8)
    assert m["agree_on_met"] == pytest.approx(4 / 5)
    assert m["agree_on_not_met"] == pytest.approx(2 / 3)
    assert m["macro_f1"] == pytest.approx(11 / 15)
    assert m["balanced_accuracy"] == pytest.approx(11 / 15)
    assert m["consensus_agreement"] == pytest.approx(1.0)
    # CHILD_HEALTH (r4, r5): 4 pairs, all physician NOT-MET; judge NOT-MET on r4's 2 -> 1/2
    # no MET pairs -> agreement on MET undefined; balanced accuracy undefined (one class only)
    # F1(MET) = 2*0/(0+2+0) = 0, F1(NOT) = 2*2/(4+0+2) = 2/3 -> macro 1/3
    # consensus r4 (agree), r5 (disagree) -> 1/2
    c = figures(report, JUDGE, "CHILD_HEALTH")
    assert (c["rows"], c["pairs"], c["met_pairs"], c["not_met_pairs"]) == (2, 4, 0, 4)
    assert c["agree_on_met"] is None and c["balanced_accuracy"] is None
    assert c["agree_on_not_met"] == pytest.approx(1 / 2)
    assert c["macro_f1"] == pytest.approx(1 / 3)
    assert c["consensus_agreement"] == pytest.approx(1 / 2)
    # no NEONATAL rows: no figures rather than zeros
    assert report.filter(pl.col("scope_category") == "NEONATAL").is_empty()


def test_physician_baseline(report):
    # a: r1 T|TT, r2 T|F, r3 F|FT, r4 F|F -> pairs TT TT TF FF FT FF
    #    TP=2 FN=1 FP=1 TN=2: MET agree 2/3, NOT agree 2/3, F1s 2/3 -> macro 2/3, balanced 2/3
    #    met-rate 2/4, others 3/6; consensus (>=2 others equal): r1 -> 1/1
    a = figures(report, "physician:a", ALL)
    assert (a["rows"], a["pairs"], a["consensus_rows"]) == (4, 6, 1)
    assert (a["met_rate"], a["reference_met_rate"]) == (pytest.approx(0.5), pytest.approx(0.5))
    assert a["macro_f1"] == pytest.approx(2 / 3) and a["balanced_accuracy"] == pytest.approx(2 / 3)
    assert a["consensus_agreement"] == pytest.approx(1.0)
    # b: r1 T|TT, r2 F|T, r3 F|FT, r5 F|F -> pairs TT TT FT FF FT FF
    #    TP=2 FN=2 FP=0 TN=2: MET agree 2/4, NOT agree 2/2; F1(MET)=4/6, F1(NOT)=4/6 -> 2/3
    #    balanced (1/2+1)/2 = 3/4; met-rate 1/4, others 4/6
    b = figures(report, "physician:b", ALL)
    assert b["agree_on_met"] == pytest.approx(0.5) and b["agree_on_not_met"] == pytest.approx(1.0)
    assert b["macro_f1"] == pytest.approx(2 / 3) and b["balanced_accuracy"] == pytest.approx(3 / 4)
    assert (b["met_rate"], b["reference_met_rate"]) == (pytest.approx(1 / 4), pytest.approx(2 / 3))
    # c: r1 T|TT, r3 T|FF, r4 F|F, r5 F|F -> TP=2 FN=0 FP=2 TN=2: MET 1.0, NOT 2/4
    #    macro 2/3, balanced 3/4; consensus r1 (agree), r3 (others F,F; c T) -> 1/2
    c = figures(report, "physician:c", ALL)
    assert c["agree_on_met"] == pytest.approx(1.0) and c["agree_on_not_met"] == pytest.approx(0.5)
    assert c["balanced_accuracy"] == pytest.approx(3 / 4)
    assert (c["consensus_rows"], c["consensus_agreement"]) == (2, pytest.approx(0.5))
    # pooled over a, b, c: 12 rater-rows, 18 pairs, TP=6 FN=3 FP=3 TN=6 -> everything 2/3;
    # met-rate 5/12 (a 2 + b 1 + c 2), others 9/18; consensus 1+1+2 = 4 rows, 3 agree -> 3/4
    p = figures(report, PHYSICIANS_POOLED, ALL)
    assert (p["rows"], p["pairs"], p["consensus_rows"]) == (12, 18, 4)
    assert p["met_rate"] == pytest.approx(5 / 12) and p["reference_met_rate"] == pytest.approx(0.5)
    assert p["macro_f1"] == pytest.approx(2 / 3) and p["balanced_accuracy"] == pytest.approx(2 / 3)
    assert p["consensus_agreement"] == pytest.approx(3 / 4)


def test_rater_alone_on_a_row_is_skipped_for_the_baseline():
    # r1 has one physician: nothing to compare, so the physician baseline has no rows at all
    one = JUDGED.head(1).with_columns(
        pl.lit([True]).alias("binary_labels"), pl.lit(["a"]).alias("anonymized_physician_ids")
    )
    report = harness_report(one, [])
    assert report["rater"].to_list() == [JUDGE]


def test_undefined_figures_are_none_not_zero():
    # judge and physicians all MET: NOT-MET class absent everywhere -> macro-F1 and balanced accuracy undefined
    f = agreement([True, True], [[True, True], [True]])
    assert f.macro_f1 is None and f.balanced_accuracy is None and f.agree_on_not_met is None
    assert f.agree_on_met == 1.0 and f.consensus_rows == 1


def test_null_labels_are_refused():
    with pytest.raises(ValueError, match="null criteria_met"):
        harness_report(JUDGED.with_columns(pl.lit(None, pl.Boolean).alias("criteria_met")), [])
    with pytest.raises(ValueError, match="at least one reference label"):
        agreement([True], [[]])
