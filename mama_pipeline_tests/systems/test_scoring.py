"""Grading and scoring checked against hand-computed cases."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from mama_pipeline.llm.client import LLMResult, RunReport
from mama_pipeline.systems import _grading as grading
from mama_pipeline.systems._answering import ANSWERS_SCHEMA
from mama_pipeline.systems._comparisons import compare_systems
from mama_pipeline.systems._items import benchmark_items, sample_items
from mama_pipeline.systems._systems_prompts import extract_letter
from mama_pipeline.systems._systems_scoreboard import scoreboard
from mama_pipeline_tests.systems.fixtures import criteria_frame, harness_frame, items_frame, mcq, rubric, short


def answers(rows: list[tuple[str, str, str, str | None]], system: str = "s") -> pl.DataFrame:
    """(item_id, track, status, answer) rows."""
    return pl.DataFrame(
        [(system, i, t, st, a, a, [], "p", "h", f"k-{i}", None if st == "ok" else "boom") for i, t, st, a in rows],
        schema=ANSWERS_SCHEMA,
        orient="row",
    )


def report(stage: str, results: dict[str, dict | None]) -> RunReport:
    out = []
    for item_id, value in results.items():
        out.append(
            LLMResult(item_id, "k", "ok", value=value)
            if value is not None
            else LLMResult(item_id, "k", "parse_failed", error="answer is not JSON")
        )
    return RunReport(stage, "m", "e", "t", "h", out)


@pytest.mark.parametrize(
    "text,letters,expected",
    [
        ("I think so.\nAnswer: B", "ABCD", "B"),
        ("**Answer: c**", "ABCD", "C"),
        ("Answer: A\nOn reflection, Answer: C", "ABCD", "A"),  # first match, as simple-evals
        ("The answer is B", "ABCD", None),
        ("Answer: E", "ABCD", None),  # not one of the item's letters
        ("answer:$D$", "ABCD", "D"),
    ],
)
def test_simple_evals_extraction_rule(text, letters, expected):
    assert extract_letter(text, letters) == expected


def test_mcq_letters_invalid_answers_count_wrong_and_failures_are_not_scored():
    items = benchmark_items(
        items_frame(
            [
                mcq("m1", "q1", ["a", "b", "c", "d"], 1),
                mcq("m2", "q2", ["a", "b", "c", "d"], 2),
                mcq("m3", "q3", ["a", "b", "c", "d"], 0),
                mcq("m4", "q4", ["a", "b", "c", "d"], 0),
            ]
        )
    )
    ans = answers(
        [
            ("m1", "mcq", "ok", "B"),
            ("m2", "mcq", "ok", "A"),
            ("m3", "mcq", "ok", "E"),
            ("m4", "mcq", "transport_failed", None),
        ]
    )
    g = grading.grades_frame(grading.mcq_grades(ans, items, "json_schema"), "exclude")
    by = {r["item_id"]: r for r in g.iter_rows(named=True)}
    assert (by["m1"]["score"], by["m1"]["correct"], by["m1"]["invalid"]) == (1.0, True, False)
    assert (by["m2"]["score"], by["m2"]["correct"], by["m2"]["invalid"]) == (0.0, False, False)
    assert (by["m3"]["score"], by["m3"]["correct"], by["m3"]["invalid"], by["m3"]["grade"]) == (
        0.0,
        False,
        True,
        "invalid",
    )
    assert by["m4"]["status"] == "answer_failed" and by["m4"]["score"] is None and "boom" in by["m4"]["error"]
    zero = grading.grades_frame(grading.mcq_grades(ans, items, "json_schema"), "score_zero")
    assert zero.filter(pl.col("item_id") == "m4").row(0, named=True)["score"] == 0.0

    text = answers([("m1", "mcq", "ok", "Let me think.\nAnswer: B"), ("m2", "mcq", "ok", "no letter here")])
    g = grading.grades_frame(grading.mcq_grades(text, items, "text"), "exclude")
    assert g["correct"].to_list() == [True, False] and g["invalid"].to_list() == [False, True]


def test_short_answer_grades_map_and_grader_failures_are_never_grades():
    items = benchmark_items(
        items_frame(
            [short("s1", "q", "ref"), short("s2", "q", "ref"), short("s3", "q", "ref"), short("s4", "q", "ref")]
        )
    )
    ans = answers(
        [
            ("s1", "short_answer", "ok", "x"),
            ("s2", "short_answer", "ok", "y"),
            ("s3", "short_answer", "ok", "z"),
            ("s4", "short_answer", "parse_failed", None),
        ]
    )
    assert [r.item_id for r in grading.short_answer_requests(ans, items)] == ["s1", "s2", "s3"]
    rep = report(
        "answer_grader",
        {
            "s1": {"reasoning": "r", "grade": "correct"},
            "s2": {"reasoning": "r", "grade": "partially_correct"},
            "s3": None,
        },
    )
    g = grading.grades_frame(grading.short_answer_grades(ans, items, rep), "exclude")
    by = {r["item_id"]: r for r in g.iter_rows(named=True)}
    assert by["s1"]["score"] == 1.0 and by["s2"]["score"] == 0.5
    assert by["s3"]["status"] == "grade_failed" and by["s3"]["score"] is None
    # the system's own unparseable answer is a wrong answer, not an unanswered item
    assert (by["s4"]["status"], by["s4"]["score"], by["s4"]["invalid"]) == ("graded", 0.0, True)


def test_healthbench_rubric_score_negative_points_and_clipping():
    texts = ["gives dose", "advises referral", "recommends aspirin", "is concise", "suggests home birth"]
    items = benchmark_items(
        items_frame(
            [
                rubric("r1", "u1", [(texts[0], 5), (texts[1], 3), (texts[2], -4)]),
                rubric("r2", "u2", [(texts[3], 2), (texts[4], -10)]),
            ]
        )
    )
    crit = criteria_frame(texts)
    ans = answers([("r1", "rubric", "ok", "a1"), ("r2", "rubric", "ok", "a2")])
    reqs = grading.rubric_requests(ans, items, crit)
    assert [r.item_id for r in reqs] == ["r1#0", "r1#1", "r1#2", "r2#0", "r2#1"]
    assert "advises referral" in reqs[1].messages[1]["content"] and "assistant: a1" in reqs[1].messages[1]["content"]
    met = {"r1#0": True, "r1#1": False, "r1#2": True, "r2#0": False, "r2#1": True}
    rep = report("rubric_judge", {k: {"explanation": "e", "criteria_met": v} for k, v in met.items()})
    g = grading.grades_frame(grading.rubric_grades(ans, items, crit, rep), "exclude")
    by = {r["item_id"]: r for r in g.iter_rows(named=True)}
    # r1: met 5 + (-4) = 1 of 8 positive points; r2: met -10 of 2 positive points (not clipped per example)
    assert by["r1"]["score"] == pytest.approx(1 / 8) and by["r1"]["grade"] == "1/8"
    assert by["r2"]["score"] == pytest.approx(-5.0)
    assert [c["criteria_met"] for c in json.loads(by["r1"]["criteria"])] == [True, False, True]
    board = scoreboard(g, harness_frame(), 200, 0, 0.95)
    overall = board.filter(pl.col("segment_kind") == "all").row(0, named=True)
    assert overall["mean"] == pytest.approx((1 / 8 - 5) / 2)  # the values the comparisons use
    assert overall["healthbench_score"] == 0.0  # HealthBench's score: that mean clipped to [0, 1]
    assert overall["grader_macro_f1"] == 0.71  # the harness's overall judge row
    neonatal = board.filter(pl.col("segment") == "NEONATAL").row(0, named=True)
    assert neonatal["grader_macro_f1"] == 0.64  # same scope category

    one_failed = report(
        "rubric_judge", {**{k: {"explanation": "e", "criteria_met": v} for k, v in met.items()}, "r2#1": None}
    )
    g = grading.grades_frame(grading.rubric_grades(ans, items, crit, one_failed), "exclude")
    r2 = g.filter(pl.col("item_id") == "r2").row(0, named=True)
    assert r2["status"] == "grade_failed" and r2["score"] is None and "criterion" in r2["error"]


def test_rubric_scoreboard_mean_of_example_scores():
    g = pl.DataFrame(
        {
            "system": ["s"] * 3,
            "item_id": ["a", "b", "c"],
            "track": ["rubric"] * 3,
            "pool": ["p"] * 3,
            "category": ["MATERNAL"] * 3,
            "status": ["graded"] * 3,
            "score": [1.0, 0.5, -0.3],
            "invalid": [None] * 3,
        },
        schema_overrides={"invalid": pl.Boolean},
    )
    row = scoreboard(g, None, 500, 0, 0.95).filter(pl.col("segment_kind") == "all").row(0, named=True)
    assert row["mean"] == pytest.approx(0.4) and row["ci_low"] is None  # 3 items: the interval is refused
    assert row["interval_refused"] == "interval: 3 values, fewer than the 30 a bootstrap interval needs"
    assert row["grader_macro_f1"] is None
    big = pl.concat([g.with_columns(item_id=pl.col("item_id") + str(i)) for i in range(12)])  # 36 items
    row = scoreboard(big, None, 500, 0, 0.95).filter(pl.col("segment_kind") == "all").row(0, named=True)
    assert row["mean"] == pytest.approx(0.4) and row["ci_low"] <= row["mean"] <= row["ci_high"]
    assert row["interval_refused"] is None


def test_scoreboard_segments_counts_and_intervals():
    rows = []
    for i, (cat, pool, score, status) in enumerate(
        [
            ("MATERNAL", "medqa", 1.0, "graded"),
            ("MATERNAL", "medqa", 0.0, "graded"),
            ("PRESCOPED", "medmcqa", 1.0, "graded"),
            ("PRESCOPED", "medmcqa", 1.0, "graded"),
            ("PRESCOPED", "medmcqa", None, "answer_failed"),
        ]
    ):
        rows.append(
            {
                "system": "s",
                "item_id": f"i{i}",
                "track": "mcq",
                "pool": pool,
                "category": cat,
                "status": status,
                "score": score,
                "invalid": i == 1,
            }
        )
    g = pl.DataFrame(rows)
    board = scoreboard(g, None, 500, 0, 0.95)
    overall = board.filter(pl.col("segment_kind") == "all").row(0, named=True)
    assert (overall["n_items"], overall["n_scored"], overall["n_unanswered"], overall["n_invalid"]) == (5, 4, 1, 1)
    assert (overall["mean"], overall["ci_low"], overall["ci_high"]) == (0.75, None, None)
    assert overall["interval_refused"] == "interval: 4 values, fewer than the 30 a bootstrap interval needs"
    pre = board.filter(pl.col("segment") == "PRESCOPED").row(0, named=True)
    assert (pre["mean"], pre["ci_low"], pre["ci_high"]) == (1.0, None, None)  # too few and no spread: no interval
    assert set(board["segment"]) == {"ALL", "MATERNAL", "PRESCOPED", "medqa", "medmcqa"}
    # every pool scored on its own, so a widely trained pool's score can be read beside the others'
    pools = {
        r["segment"]: (r["mean"], r["n_items"], r["n_scored"])
        for r in board.filter(pl.col("segment_kind") == "pool").iter_rows(named=True)
    }
    assert pools == {"medqa": (0.5, 2, 2), "medmcqa": (1.0, 3, 2)}


def test_comparisons_exact_mcnemar_holm_and_rag_first():
    n = 12
    # rag right on items 0..9 where closed is wrong; both right on 10, 11
    rag = [1.0] * n
    closed = [0.0] * 10 + [1.0] * 2
    other = [1.0] * 6 + [0.0] * 6
    rows = []
    for system, scores in (("closed", closed), ("rag", rag), ("other", other)):
        for i, s in enumerate(scores):
            rows.append(
                {
                    "system": system,
                    "item_id": f"i{i:02d}",
                    "track": "mcq",
                    "pool": "p",
                    "category": "MATERNAL" if i % 2 else "NEONATAL",
                    "status": "graded",
                    "score": s,
                }
            )
    table = compare_systems(pl.DataFrame(rows), {"rag": "closed"}, 1000, 0, 0.95)
    pair = table.filter((pl.col("segment") == "ALL") & (pl.col("comparison") == "rag_vs_baseline")).row(0, named=True)
    assert (pair["system_a"], pair["system_b"]) == ("rag", "closed")  # RAG first: diff = what retrieval adds
    assert (pair["only_a"], pair["only_b"]) == (10, 0)
    assert pair["p_mcnemar"] == pytest.approx(2 * 0.5**10)
    assert pair["diff"] == pytest.approx(10 / 12)
    family = table.filter(pl.col("segment") == "ALL").sort("p_mcnemar")
    assert family.height == 3
    from statsmodels.stats.multitest import multipletests

    expected = multipletests(family["p_mcnemar"].to_list(), method="holm")[1]
    assert np.allclose(family["p_mcnemar_holm"].to_numpy(), expected)
    per_category = table.filter(pl.col("segment") != "ALL")
    assert set(per_category["segment"]) == {"MATERNAL", "NEONATAL"}
    assert set(per_category["comparison"]) == {"rag_vs_baseline"}


def test_sample_is_seeded_per_track_and_respects_max_criteria():
    rows = [mcq(f"m{i}", "q", ["a", "b"], 0) for i in range(10)] + [short(f"s{i}", "q", "r") for i in range(3)]
    rows += [rubric("r-small", "u", [("c1", 1)]), rubric("r-big", "u", [(f"c{i}", 1) for i in range(9)])]
    every = benchmark_items(items_frame(rows))
    picked = sample_items(every, 2, seed=7, max_rubric_criteria=3)
    assert picked.group_by("track").len().sort("track").rows() == [("mcq", 2), ("rubric", 1), ("short_answer", 2)]
    assert "r-big" not in picked["item_id"].to_list()
    assert picked.equals(sample_items(every, 2, seed=7, max_rubric_criteria=3))
    bigger = sample_items(every, 4, seed=7, max_rubric_criteria=3)
    assert set(picked["item_id"]) <= set(bigger["item_id"])  # a larger sample extends a smaller one
    assert sample_items(every, 0, 0).height == every.height
    assert set(every.filter(pl.col("track") == "mcq")["category"]) == {"PRESCOPED"}


def test_bad_item_rows_are_named():
    bad = items_frame([{"item_id": "x1", "pool": "p", "set_type": "essay", "category": None, "item_json": "{}"}])
    with pytest.raises(ValueError, match="x1.*unknown set_type"):
        benchmark_items(bad)
    bad = items_frame([{"item_id": "x2", "pool": "p", "set_type": "mcq", "category": None, "item_json": "{oops"}])
    with pytest.raises(ValueError, match="x2.*not JSON"):
        benchmark_items(bad)


def test_pairs_with_fewer_than_two_common_items_are_not_tested():
    rows = [
        {"system": s, "item_id": i, "track": "mcq", "pool": "p", "category": c, "status": "graded", "score": v}
        for s, i, c, v in [
            ("a", "i1", "MATERNAL", 1.0),
            ("b", "i1", "MATERNAL", 0.0),
            ("a", "i2", "NEONATAL", 1.0),
            ("b", "i2", "NEONATAL", 1.0),
        ]
    ]
    table = compare_systems(pl.DataFrame(rows), {"b": "a"}, 200, 0, 0.95)
    assert table["segment"].to_list() == ["ALL"]  # one item per category: no test there
    assert compare_systems(pl.DataFrame(rows[:2]), {}, 200, 0, 0.95).is_empty()
