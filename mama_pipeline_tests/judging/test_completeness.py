"""Pool completeness: recall of the main pool against relevant chunks known from both rounds."""

import polars as pl
import pytest

from mama_pipeline.judging._completeness import pool_recall


def frame(rows):
    return pl.DataFrame(rows, schema={"query_id": pl.String, "chunk_id": pl.String}, orient="row")


def test_recall_on_hand_example():
    main = frame([("q1", "a"), ("q1", "b"), ("q2", "c"), ("q3", "x")])
    audit = frame([("q1", "a"), ("q1", "b"), ("q1", "d"), ("q2", "c"), ("q2", "e"), ("q2", "f")])
    labels = pl.DataFrame(
        {
            "query_id": ["q1", "q1", "q1", "q2", "q2", "q2", "q3"],
            "chunk_id": ["a", "b", "d", "c", "e", "f", "x"],
            "score": [6, 3, 5, 4, 1, 3, 6],
        }
    )
    tiers = pl.DataFrame({"query_id": ["q1", "q2", "q3"], "tier": ["high", "low", "high"]})
    t = pool_recall(main, audit, labels, tiers, {"lenient": 3, "strict": 5})
    row = {(r["scope"], r["cut"]): r for r in t.to_dicts()}
    # lenient: q1 relevant a,b,d (main has a,b); q2 relevant c,f (main has c); q3 is not an audit query
    assert row["all", "lenient"]["relevant_known"] == 5 and row["all", "lenient"]["relevant_in_main_pool"] == 3
    assert row["all", "lenient"]["recall_micro"] == pytest.approx(3 / 5)
    assert row["all", "lenient"]["recall_macro"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    # strict: q1 relevant a, d -> 1/2; q2 none
    assert row["all", "strict"]["recall_micro"] == pytest.approx(1 / 2)
    assert row["all", "strict"]["queries_with_relevant"] == 1 and row["all", "strict"]["audit_queries"] == 2
    assert row["low", "strict"]["recall_micro"] is None and row["low", "lenient"]["recall_micro"] == pytest.approx(
        1 / 2
    )
    assert row["high", "lenient"]["recall_micro"] == pytest.approx(2 / 3)


def test_unlabelled_audit_pairs_do_not_count_as_relevant():
    main = frame([("q1", "a")])
    audit = frame([("q1", "a"), ("q1", "b")])
    labels = pl.DataFrame({"query_id": ["q1"], "chunk_id": ["a"], "score": [4]})
    t = pool_recall(main, audit, labels, pl.DataFrame({"query_id": ["q1"], "tier": ["high"]}), {"lenient": 3})
    assert t.filter(pl.col("scope") == "all")["recall_micro"][0] == 1.0
