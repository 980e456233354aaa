"""Track measures against hand-computed values (ir_measures: pyndeval for the facts, pytrec_eval for the labels)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.multipassage._multipassage_measures import fact_qrels, graded_qrels, track_values
from mama_pipeline.multipassage._multipassage_scoreboard import score_track
from mama_pipeline.multipassage.settings import MultipassageSettings

# one fact per chunk of each set (fact n taken from the n-th chunk), unless a test says otherwise
QUESTIONS = pl.DataFrame(
    {
        "query_id": ["mq_00001", "mq_00002", "mq_00003"],
        "chunk_ids": [["A", "B"], ["C", "D", "E"], ["F", "G"]],
        "fact_chunk_ids": [["A", "B"], ["C", "D", "E"], ["F", "G"]],
        "tier": ["high", "high", "low"],
    },
)
FACT_LABEL_SCHEMA = {"query_id": pl.String, "chunk_id": pl.String, "facts": pl.List(pl.Int64)}
NO_FACT_LABELS = pl.DataFrame(schema=FACT_LABEL_SCHEMA)


def fact_labels(rows: list[tuple[str, str, list[int]]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=FACT_LABEL_SCHEMA, orient="row")


def run_of(rankings: dict[str, list[str]], retriever: str = "r1") -> pl.DataFrame:
    rows = [(retriever, q, d, i + 1) for q, docs in rankings.items() for i, d in enumerate(docs)]
    return pl.DataFrame(
        rows,
        schema={"retriever": pl.String, "query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64},
        orient="row",
    )


def values(
    run: pl.DataFrame, cutoffs=(2, 4), labels: pl.DataFrame = NO_FACT_LABELS, alpha: float = 0.5
) -> dict[tuple[str, str], float]:
    qrels = fact_qrels(QUESTIONS, labels)
    v = track_values(run, qrels, QUESTIONS["query_id"].to_list(), ["r1"], list(cutoffs), alpha)
    return {(q, m): x for _, q, m, x in v.iter_rows()}


def dcg(ranks: list[int]) -> float:
    return sum(1 / math.log2(1 + r) for r in ranks)


def test_hand_computed_values():
    # q1: pieces A, B at ranks 2 and 4; q2: C at 1, E at 3, D missing; q3: not retrieved at all
    got = values(run_of({"mq_00001": ["X", "A", "Y", "B"], "mq_00002": ["C", "Z", "E", "W"]}))
    assert got[("mq_00001", "alpha_nDCG@4")] == pytest.approx(dcg([2, 4]) / dcg([1, 2]))
    assert got[("mq_00001", "alpha_nDCG@2")] == pytest.approx(dcg([2]) / dcg([1, 2]))
    assert got[("mq_00001", "R@2[pieces]")] == pytest.approx(0.5)
    assert got[("mq_00001", "R@4[pieces]")] == pytest.approx(1.0)
    assert got[("mq_00001", "AllIn@2[pieces]")] == 0.0
    assert got[("mq_00001", "AllIn@4[pieces]")] == 1.0
    assert got[("mq_00002", "alpha_nDCG@4")] == pytest.approx(dcg([1, 3]) / dcg([1, 2, 3]))
    assert got[("mq_00002", "R@4[pieces]")] == pytest.approx(2 / 3)
    assert got[("mq_00002", "AllIn@4[pieces]")] == 0.0
    for m in ("alpha_nDCG@4", "R@4[pieces]", "AllIn@4[pieces]"):
        assert got[("mq_00003", m)] == 0.0  # nothing returned scores 0


def test_a_perfect_ranking_scores_one_and_order_matters():
    perfect = values(run_of({"mq_00001": ["B", "A"]}), cutoffs=(2,))
    assert perfect[("mq_00001", "alpha_nDCG@2")] == pytest.approx(1.0)
    assert perfect[("mq_00001", "AllIn@2[pieces]")] == 1.0
    late = values(run_of({"mq_00001": ["X", "Y", "A", "B"]}), cutoffs=(4,))
    assert late[("mq_00001", "alpha_nDCG@4")] == pytest.approx(dcg([3, 4]) / dcg([1, 2]))


def test_alpha_weighs_a_chunk_that_repeats_a_fact():
    """X states fact 1 as A does: ranked A, X, B, the repeat at rank 2 gains (1 - alpha), so alpha changes the value.

    ndeval: gain of a document = sum over its facts of (1 - alpha)^(times the fact was seen above); DCG with
    log2(1 + rank); the ideal ranking is built greedily (A or X, then B, then the repeat)."""
    labels = fact_labels([("mq_00001", "X", [1]), ("mq_00001", "Y", [])])
    run = run_of({"mq_00001": ["A", "X", "B"]})
    got = {a: values(run, (2, 3), labels, alpha=a) for a in (0.1, 0.9)}
    # alpha 0.1: DCG@3 = 1 + 0.9/log2(3) + 1/2 = 2.067837, ideal = 1 + 1/log2(3) + 0.9/2 = 2.080930
    assert got[0.1][("mq_00001", "alpha_nDCG(alpha=0.1)@3")] == pytest.approx(2.0678368 / 2.0809298, abs=1e-6)
    # alpha 0.9: DCG@3 = 1 + 0.1/log2(3) + 1/2 = 1.563093, ideal = 1 + 1/log2(3) + 0.1/2 = 1.680930
    assert got[0.9][("mq_00001", "alpha_nDCG(alpha=0.9)@3")] == pytest.approx(1.5630930 / 1.6809298, abs=1e-6)
    # @2: DCG = 1 + (1 - alpha)/log2(3), ideal = 1 + 1/log2(3)
    assert got[0.1][("mq_00001", "alpha_nDCG(alpha=0.1)@2")] == pytest.approx(1.5678368 / 1.6309298, abs=1e-6)
    assert got[0.9][("mq_00001", "alpha_nDCG(alpha=0.9)@2")] == pytest.approx(1.0630930 / 1.6309298, abs=1e-6)
    for a in (0.1, 0.9):  # recall over facts: the repeat adds nothing, B brings fact 2 at rank 3
        assert got[a][("mq_00001", "R@2[pieces]")] == pytest.approx(0.5)
        assert got[a][("mq_00001", "AllIn@2[pieces]")] == 0.0
        assert got[a][("mq_00001", "R@3[pieces]")] == 1.0 and got[a][("mq_00001", "AllIn@3[pieces]")] == 1.0


def test_a_chunk_outside_the_set_stating_every_fact_covers_the_question():
    labels = fact_labels([("mq_00001", "Z", [1, 2])])
    got = values(run_of({"mq_00001": ["Z", "A"]}), (1, 2), labels)
    assert got[("mq_00001", "R@1[pieces]")] == 1.0 and got[("mq_00001", "AllIn@1[pieces]")] == 1.0
    assert got[("mq_00001", "alpha_nDCG@1")] == pytest.approx(1.0)  # gain 2 at rank 1, as the ideal's
    # @2: A repeats fact 1: DCG = 2 + 0.5/log2(3); ideal = Z, then A or B (0.5 each): the same
    assert got[("mq_00001", "alpha_nDCG@2")] == pytest.approx(1.0)


def test_fact_qrels_list_every_chunk_stating_each_fact():
    labels = fact_labels([("mq_00001", "X", [2]), ("mq_00001", "A", [1, 2]), ("mq_00002", "Q", [])])
    rows = fact_qrels(QUESTIONS, labels).filter(pl.col("query_id") == "mq_00001").select("iteration", "doc_id")
    assert sorted(rows.iter_rows()) == [("1", "A"), ("2", "A"), ("2", "B"), ("2", "X")]
    with pytest.raises(ValueError, match=r"\(mq_00001, X\) names fact 3 of a question with 2 facts"):
        fact_qrels(QUESTIONS, fact_labels([("mq_00001", "X", [3])]))


def test_graded_qrels():
    labels = pl.DataFrame(
        {"query_id": ["mq_00001", "mq_00001", "mq_00001"], "chunk_id": ["A", "B", "X"], "score": [6, 1, 4]}
    )
    graded = {(q, d): r for q, d, r in graded_qrels(labels, QUESTIONS, 3).iter_rows()}
    assert graded[("mq_00001", "A")] == 6  # a piece keeps a higher judge score
    assert graded[("mq_00001", "B")] == 3  # a piece judged low is raised to the lenient cut
    assert graded[("mq_00001", "X")] == 4  # another pooled chunk counts as the judge says
    assert graded[("mq_00003", "F")] == 3  # an unjudged piece is still relevant


def test_scoreboard_means_per_tier_and_paired_tests():
    rankings = pl.concat(
        [
            run_of({"mq_00001": ["A", "B"], "mq_00002": ["C", "D", "E"], "mq_00003": ["F", "G"]}, "good"),
            run_of({"mq_00001": ["X", "A"], "mq_00002": ["Z", "C"], "mq_00003": ["Y"]}, "weak"),
        ]
    ).select(
        "query_id", "retriever", "rank", pl.col("doc_id").alias("chunk_id"), score=-pl.col("rank").cast(pl.Float64)
    )
    labels = pl.DataFrame(schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Int64})
    mp = MultipassageSettings(
        cutoffs=[3], significance_measures=["AllIn@3[pieces]", "alpha_nDCG@3"], headline_measure="AllIn@3[pieces]"
    )
    ev = EvaluationSettings(cutoffs=[3], resamples=200)
    scores = score_track(rankings, labels, NO_FACT_LABELS, QUESTIONS, ["good", "weak"], mp, ev)
    board = {(t, r, m): x for t, r, m, x in scores.board.select("tier", "retriever", "measure", "mean").iter_rows()}
    assert board[("all", "good", "AllIn@3[pieces]")] == pytest.approx(1.0)
    assert board[("all", "weak", "AllIn@3[pieces]")] == 0.0
    assert board[("high", "weak", "R@3[pieces]")] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert board[("all", "good", "Success(rel=3)@3")] == pytest.approx(1.0)  # headline measure on graded qrels
    sig = scores.significance
    assert set(sig["tier"].to_list()) == {"all", "high"}  # tier "low" has one question: no test
    row = sig.filter((pl.col("tier") == "all") & (pl.col("measure") == "AllIn@3[pieces]")).row(0, named=True)
    assert (row["only_a"], row["only_b"], row["mean_a"], row["mean_b"]) == (3, 0, 1.0, 0.0)
    assert row["p_mcnemar_holm"] == pytest.approx(0.25)  # exact McNemar, 3 discordant queries, one pair


def test_unknown_significance_measure_is_named():
    mp = MultipassageSettings(significance_measures=["nope@3"])
    with pytest.raises(ValueError, match="nope@3"):
        score_track(pl.DataFrame(), pl.DataFrame(), NO_FACT_LABELS, QUESTIONS, ["a", "b"], mp, EvaluationSettings())


def test_no_verified_questions_gives_an_empty_scoreboard_not_an_error():
    empty_q = QUESTIONS.clear()
    rankings = pl.DataFrame(
        schema={
            "query_id": pl.String,
            "retriever": pl.String,
            "rank": pl.Int32,
            "chunk_id": pl.String,
            "score": pl.Float64,
        }
    )
    labels = pl.DataFrame(schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Int64})
    scores = score_track(
        rankings, labels, NO_FACT_LABELS, empty_q, ["a", "b"], MultipassageSettings(), EvaluationSettings()
    )
    assert scores.board.is_empty() and scores.per_query.is_empty() and scores.significance.is_empty()


def test_one_verified_question_gives_its_means_and_refused_tests_not_a_crash():
    # issue 46: a run whose multi-passage track verified one question stopped at scipy's "two or more observations"
    one = QUESTIONS.head(1)
    rankings = pl.concat([run_of({"mq_00001": ["A", "B"]}, "good"), run_of({"mq_00001": ["X", "A"]}, "weak")]).select(
        "query_id", "retriever", "rank", pl.col("doc_id").alias("chunk_id"), score=-pl.col("rank").cast(pl.Float64)
    )
    labels = pl.DataFrame(schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Int64})
    mp = MultipassageSettings(
        cutoffs=[3], significance_measures=["AllIn@3[pieces]", "alpha_nDCG@3"], headline_measure="AllIn@3[pieces]"
    )
    scores = score_track(rankings, labels, NO_FACT_LABELS, one, ["good", "weak"], mp, EvaluationSettings(cutoffs=[3]))
    board = {(t, r, m): x for t, r, m, x in scores.board.select("tier", "retriever", "measure", "mean").iter_rows()}
    assert (board[("all", "good", "AllIn@3[pieces]")], board[("all", "weak", "AllIn@3[pieces]")]) == (1.0, 0.0)
    row = scores.significance.filter(pl.col("measure") == "AllIn@3[pieces]").row(0, named=True)
    assert (row["tier"], row["n_queries"], row["diff"], row["ci_low"], row["p_randomization"]) == (
        "all",
        1,
        1.0,
        None,
        None,
    )
    assert row["refused"] == (
        "interval: 1 value, fewer than the 30 a bootstrap interval needs; "
        "randomization: 1 pair, fewer than the 2 a paired test needs"
    )
    assert (row["only_a"], row["only_b"], row["p_mcnemar"]) == (1, 0, 1.0)  # exact McNemar: one discordant query
