"""The rankings contract: trec_eval's order (score desc, then chunk id desc), ranks 1..k."""

import math

import polars as pl
import pytest

from mama_pipeline.retrieval._retriever_rankings import order_rankings, ranking_violations


def hits(rows):
    return pl.DataFrame(rows, schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64}, orient="row")


def test_ties_broken_by_chunk_id_descending_and_cut_at_k():
    frame = hits([("q1", "a", 1.0), ("q1", "c", 2.0), ("q1", "b", 2.0), ("q1", "d", 2.0), ("q2", "a", 0.5)])
    out = order_rankings(frame, "r", k=3)
    q1 = out.filter(pl.col("query_id") == "q1")
    assert q1["chunk_id"].to_list() == ["d", "c", "b"]  # the tie at 2.0 keeps the larger ids; "a" is cut
    assert q1["rank"].to_list() == [1, 2, 3]
    assert out.filter(pl.col("query_id") == "q2")["rank"].to_list() == [1]
    assert set(out["retriever"]) == {"r"}
    assert ranking_violations(out).is_empty()


def test_order_matches_trec_eval(tmp_path):
    """pytrec_eval (trec_eval's code) ranks by score then doc id descending: P@1 sees the same first chunk."""
    import pytrec_eval

    frame = hits([("q1", "a", 1.0), ("q1", "b", 1.0), ("q1", "c", 1.0)])
    first = order_rankings(frame, "r", k=3)["chunk_id"][0]
    for relevant in ("a", "b", "c"):
        ev = pytrec_eval.RelevanceEvaluator({"q1": {relevant: 1}}, {"P_1"})
        p1 = ev.evaluate({"q1": {"a": 1.0, "b": 1.0, "c": 1.0}})["q1"]["P_1"]
        assert p1 == (1.0 if relevant == first else 0.0)


def test_duplicate_and_non_finite_hits_fail():
    with pytest.raises(ValueError, match="scored twice"):
        order_rankings(hits([("q1", "a", 1.0), ("q1", "a", 0.5)]), "r", 5)
    with pytest.raises(ValueError, match="non-finite score"):
        order_rankings(hits([("q1", "a", math.nan)]), "r", 5)


def test_violations_found():
    good = order_rankings(hits([("q1", "a", 2.0), ("q1", "b", 1.0)]), "r", 5)
    swapped = good.with_columns(rank=pl.Series([2, 1], dtype=pl.Int32))
    assert ranking_violations(swapped).height > 0
    gap = good.with_columns(rank=pl.Series([1, 3], dtype=pl.Int32))
    assert ranking_violations(gap).height == 1
