"""The judged labels read from the store a slice of queries at a time, counted and aggregated by the store."""

import polars as pl

from mama_pipeline.evaluation._stored_qrels import StoredQrels
from mama_pipeline_tests.evaluation.synthetic import as_judging_table


def _labels(store) -> StoredQrels:
    judgments = pl.DataFrame(
        {
            "query_id": ["q2", "q1", "q2", "q3", "q1", "q9"],
            "chunk_id": ["c1", "c7", "c4", "c2", "c3", "c5"],
            "score": [0, 6, 3, 2, 4, 5],
        }
    )
    store.write_table("judgments", as_judging_table(judgments))
    return StoredQrels(store)


def test_a_slice_of_queries_reads_their_labels_in_table_order(store):
    labels = _labels(store)
    got = labels.of_queries(["q1", "q2"])
    assert got.rows() == [("q2", "c1", 0), ("q1", "c7", 6), ("q2", "c4", 3), ("q1", "c3", 4)]
    assert got.columns == ["query_id", "doc_id", "relevance"]
    assert labels.of_queries(["q4"]).height == 0
    assert labels.dropped == {}  # every stored judgment has a score


def test_relevant_best_and_outside_come_from_the_store(store):
    labels = _labels(store)
    assert labels.relevant(4).rows() == [("q1", "c7", 6), ("q1", "c3", 4), ("q9", "c5", 5)]
    assert labels.best().rows() == [("q1", 6), ("q2", 3), ("q3", 2), ("q9", 5)]
    assert labels.outside(["q1", "q2", "q3"]) == 1
    assert labels.outside(["q1"]) == 4
    assert labels.count() == 6
    assert labels.counts().sort("relevance").rows() == [(0, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1)]
    assert labels.judged_by().rows() == [("fake-judge", "h")]


def test_the_labels_in_table_order_a_few_rows_at_a_time(store):
    labels = _labels(store)
    parts = list(labels.in_table_order(4))
    assert [p.height for p in parts] == [4, 2]
    assert pl.concat(parts).rows() == labels.of_queries(["q1", "q2", "q3", "q9"]).rows()
    assert labels.query_ids() == ["q1", "q2", "q3", "q9"]
