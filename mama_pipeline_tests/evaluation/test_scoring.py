"""Scoreboard figures against a direct pytrec_eval computation, and the hand-made wHR / wP."""

import numpy as np
import polars as pl
import pytest
import pytrec_eval

from mama_pipeline.evaluation._errors import EvaluationInputError
from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard, wide_scoreboard
from mama_pipeline.evaluation._scoreboard_measures import beir_plan, mamaretrieval_plan

CUTOFFS = [1, 3, 5, 10, 20]


def _random_benchmark(seed: int = 7):
    """Graded qrels and three runs with score ties, ranked in trec_eval's order (score desc, doc id desc).

    Some queries have no label >= 5, some no label at all, some are missing from a run.
    """
    rng = np.random.default_rng(seed)
    query_ids = [f"q{i:03d}" for i in range(60)]
    qrels, runs = [], []
    for qi, q in enumerate(query_ids):
        docs = [f"d{qi}_{j:02d}" for j in range(30)]
        if qi % 10 != 9:  # every tenth query has no label at all
            top = 4 if qi % 4 == 0 else 7  # a quarter of the queries have nothing >= 5
            for d in rng.choice(docs, 18, replace=False):
                qrels.append((q, str(d), int(rng.integers(0, top))))
        for name in ("alpha", "beta", "gamma"):
            if name == "gamma" and qi % 7 == 0:
                continue  # gamma returns nothing for these queries
            picked = rng.choice(docs, 20, replace=False)
            scores = np.round(rng.random(20) * 4) / 4  # few distinct values: many ties
            for d, s in zip(picked, scores):
                runs.append((name, q, str(d), float(s)))
    qrels_df = pl.DataFrame(qrels, schema=["query_id", "doc_id", "relevance"], orient="row")
    scored = pl.DataFrame(runs, schema=["retriever", "query_id", "doc_id", "score"], orient="row")
    ranked = scored.sort(
        ["retriever", "query_id", "score", "doc_id"], descending=[False, False, True, True]
    ).with_columns((pl.int_range(pl.len()).over("retriever", "query_id") + 1).alias("rank"))
    return query_ids, qrels_df, ranked


def _direct(qrels: pl.DataFrame, run: pl.DataFrame, retriever: str, query_ids, measure: str, rel: int) -> float:
    """pytrec_eval on the raw scores, missing queries counted as 0, mean over every benchmark query."""
    qd: dict = {}
    for q, d, r in qrels.iter_rows():
        qd.setdefault(q, {})[d] = r
    rd: dict = {}
    for q, d, s in run.filter(pl.col("retriever") == retriever).select("query_id", "doc_id", "score").iter_rows():
        rd.setdefault(q, {})[d] = s
    base, _, k = measure.rpartition("_")
    asked = f"{base}.{k}" if k.isdigit() else measure  # e.g. "success.3": trec_eval's parameterised cutoffs
    res = pytrec_eval.RelevanceEvaluator(qd, {asked}, relevance_level=rel).evaluate(rd)
    return sum(res.get(q, {}).get(measure, 0.0) for q in query_ids) / len(query_ids)


def test_scoreboard_equals_direct_pytrec_eval_with_ties_and_unanswerable_queries():
    query_ids, qrels, run = _random_benchmark()
    assert run.group_by("retriever", "query_id", "score").len()["len"].max() > 1  # ties present
    plan = mamaretrieval_plan(CUTOFFS, 3, 5)
    ev = evaluate(run.select("retriever", "query_id", "doc_id", "rank"), qrels, query_ids, plan)
    board = scoreboard(ev, qrels)
    got = {(r["retriever"], r["measure"]): r["mean"] for r in board.iter_rows(named=True)}
    trec_names = {"Success": "success_{k}", "RR": "recip_rank", "nDCG": "ndcg_cut_{k}", "P": "P_{k}", "R": "recall_{k}"}
    checked = 0
    for m in plan.measures():
        family = {"HR": "Success", "MRR": "RR"}.get(m.family, m.family)
        if family not in trec_names:
            continue
        trec = trec_names[family].format(k=m.k)
        for name in ("alpha", "beta", "gamma"):
            expected = _direct(qrels, run, name, query_ids, trec, m.rel or 1)
            assert got[(name, m.name)] == pytest.approx(expected, abs=1e-12), (name, m.name)
            checked += 1
    assert checked == 3 * (2 * 5 + 2 + 5 + 2 * 5 + 2 * 5)
    # every benchmark query counts: 60 queries for each retriever and measure
    assert set(board["n_queries"].to_list()) == {60}
    assert ev.per_query.group_by("retriever", "measure").len()["len"].unique().to_list() == [60]


def test_slices_of_queries_give_the_same_rows_in_benchmark_order():
    query_ids, qrels, run = _random_benchmark()
    shuffled = list(np.random.default_rng(3).permutation(query_ids))  # benchmark order, not sorted order
    plan = mamaretrieval_plan(CUTOFFS, 3, 5)
    retrievers = ["gamma", "alpha", "beta"]
    whole = evaluate(run.drop("score"), qrels, shuffled, plan, retrievers, slice_size=len(query_ids))
    sliced = evaluate(run.drop("score"), qrels, shuffled, plan, retrievers, slice_size=7)  # 60 = 8 x 7 + 4
    assert sliced.per_query.equals(whole.per_query)
    names = [m.name for m in plan.measures()]
    expected_keys = [(r, q, m) for r in retrievers for q in shuffled for m in names]
    assert sliced.per_query.select("retriever", "query_id", "measure").rows() == expected_keys
    none = evaluate(run.drop("score"), qrels, [], plan, retrievers, slice_size=7)
    assert none.per_query.height == 0 and none.per_query.schema == whole.per_query.schema


def test_queries_without_qualifying_chunk_are_counted_and_score_zero():
    query_ids, qrels, run = _random_benchmark()
    plan = mamaretrieval_plan(CUTOFFS, 3, 5)
    ev = evaluate(run.drop("score"), qrels, query_ids, plan)
    board = scoreboard(ev, qrels).filter(pl.col("retriever") == "alpha")
    best = qrels.group_by("query_id").agg(pl.col("relevance").max())
    strict_ok = set(best.filter(pl.col("relevance") >= 5)["query_id"].to_list())
    lenient_ok = set(best.filter(pl.col("relevance") >= 3)["query_id"].to_list())
    no_rel = dict(board.select("measure", "queries_no_relevant").iter_rows())
    assert no_rel["Success(rel=5)@5"] == 60 - len(strict_ok)
    assert no_rel["Success(rel=3)@5"] == 60 - len(lenient_ok)
    assert 60 - len(strict_ok) >= 15  # the fixture really has such queries
    unanswerable = set(query_ids) - strict_ok
    values = ev.per_query.filter((pl.col("measure") == "Success(rel=5)@20") & pl.col("query_id").is_in(unanswerable))
    assert values["value"].to_list() == [0.0] * values.height and values.height == 3 * len(unanswerable)


def test_order_comes_from_rank_not_from_tied_scores():
    # both chunks score 1.0; the retriever ranked "a" (label 0) first and "b" (label 6) second
    run = pl.DataFrame({"retriever": ["r", "r"], "query_id": ["q", "q"], "doc_id": ["a", "b"], "rank": [1, 2]})
    qrels = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [0, 6]})
    ev = evaluate(run, qrels, ["q"], mamaretrieval_plan([1], 3, 5))
    values = dict(ev.per_query.select("measure", "value").iter_rows())
    assert values["RR(rel=3)"] == 0.5
    assert values["Success(rel=3)@1"] == 0.0
    assert values["wHR@1"] == 0.0


def test_whr_and_wp_hand_example():
    # q1 ranks labels [6, unjudged, 3, 0]; q2 returns [2]; q3 returns nothing
    run = pl.DataFrame(
        {
            "retriever": ["r"] * 5,
            "query_id": ["q1", "q1", "q1", "q1", "q2"],
            "doc_id": ["a", "x", "b", "c", "d"],
            "rank": [1, 2, 3, 4, 1],
        }
    )
    qrels = pl.DataFrame(
        {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "b", "c", "d"], "relevance": [6, 3, 0, 2]}
    )
    ev = evaluate(run, qrels, ["q1", "q2", "q3"], mamaretrieval_plan([1, 3, 5], 3, 5))
    v = {(q, m): x for q, m, x in ev.per_query.select("query_id", "measure", "value").iter_rows()}
    assert v[("q1", "wHR@1")] == pytest.approx(1.0)
    assert v[("q1", "wP@3")] == pytest.approx((6 + 0 + 3) / 6 / 3)  # 0.5
    assert v[("q1", "wP@5")] == pytest.approx((6 + 0 + 3 + 0) / 6 / 5)  # empty fifth slot counts 0
    assert v[("q2", "wHR@5")] == pytest.approx(2 / 6)
    assert v[("q2", "wP@5")] == pytest.approx(2 / 6 / 5)
    assert v[("q3", "wHR@5")] == 0.0 and v[("q3", "wP@1")] == 0.0
    board = dict(scoreboard(ev, qrels).select("measure", "mean").iter_rows())
    assert board["wP@3"] == pytest.approx((0.5 + 2 / 18 + 0) / 3)
    assert board["wHR@5"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    # Judged@k: ir_measures divides by min(k, retrieved); q3 (nothing retrieved) counts 0
    assert v[("q1", "Judged@3")] == pytest.approx(2 / 3)
    assert v[("q2", "Judged@5")] == 1.0 and v[("q3", "Judged@5")] == 0.0


def test_robust_measures_lead_the_scoreboard():
    labels = wide_scoreboard(
        scoreboard(
            evaluate(
                pl.DataFrame({"retriever": ["r"], "query_id": ["q"], "doc_id": ["a"], "rank": [1]}),
                pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [4]}),
                ["q"],
                mamaretrieval_plan([1, 5], 3, 5),
            ),
            pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [4]}),
        )
    ).columns[1:]
    assert labels[:6] == ["HR@1 lenient", "HR@5 lenient", "HR@1 strict", "HR@5 strict", "MRR lenient", "MRR strict"]
    assert labels[6:8] == ["wHR@1", "wHR@5"] and labels[-1] == "Judged@5"


def test_beir_plan_has_one_cut_and_no_weighted_measures():
    names = [m.name for m in beir_plan([10]).measures()]
    assert names == ["Success@10", "RR", "nDCG@10", "P@10", "R@10", "Judged@10"]


def test_runs_outside_the_benchmark_are_dropped_and_counted():
    run = pl.DataFrame({"retriever": ["r", "r"], "query_id": ["q", "zz"], "doc_id": ["a", "a"], "rank": [1, 1]})
    qrels = pl.DataFrame({"query_id": ["q", "yy"], "doc_id": ["a", "a"], "relevance": [1, 1]})
    ev = evaluate(run, qrels, ["q"], beir_plan([1]))
    assert ev.dropped == {"run rows of queries outside the benchmark": 1, "qrels of queries outside the benchmark": 1}


@pytest.mark.parametrize(
    "column,values,reason",
    [
        ("doc_id", ["a", "a"], "document 'a' appears more than once"),
        ("rank", [1, 1], "rank 1 appears more than once"),
    ],
)
def test_run_with_duplicates_is_an_error(column, values, reason):
    run = {"retriever": ["r", "r"], "query_id": ["q", "q"], "doc_id": ["a", "b"], "rank": [1, 2]}
    run[column] = values
    with pytest.raises(EvaluationInputError, match=reason):
        evaluate(
            pl.DataFrame(run),
            pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]}),
            ["q"],
            beir_plan([1]),
            run_source="rankings",
        )


def test_a_run_column_of_the_wrong_type_is_a_one_line_error():
    from mama_pipeline.evaluation._runs import check_run

    run = pl.DataFrame({"retriever": ["a"], "query_id": ["q1"], "doc_id": ["d1"], "rank": ["first"]})
    with pytest.raises(EvaluationInputError) as err:
        check_run(run, "runs/a.parquet")
    message = str(err.value)
    assert (
        message.startswith("runs/a.parquet: column types: conversion from `str` to `i64` failed")
        and "\n" not in message
    )
