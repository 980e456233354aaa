"""The run read from the store a slice of queries at a time scores as the run held whole."""

import polars as pl
import pytest

from mama_pipeline.evaluation._per_query_scoring import evaluate, evaluate_slices, per_query_blocks
from mama_pipeline.evaluation._retrieval_page import label_mix
from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan
from mama_pipeline.evaluation._stored_run import StoredRun
from mama_pipeline_tests.evaluation.test_scoring import CUTOFFS, _random_benchmark


def _stored(store):
    """60 benchmark queries; alpha and beta stored (with 2 queries outside the benchmark), gamma a run file."""
    query_ids, qrels, run = _random_benchmark()
    outside = run.filter(pl.col("query_id").is_in(["q000", "q001"]) & (pl.col("retriever") == "alpha"))
    outside = outside.with_columns(("zz" + pl.col("query_id")).alias("query_id"))  # 2 x 20 rows
    ranked = pl.concat([run.filter(pl.col("retriever") != "gamma"), outside])
    for name in ("alpha", "beta"):
        one = ranked.filter(pl.col("retriever") == name).rename({"doc_id": "chunk_id"})
        store.write_table("rankings", one.sample(fraction=1.0, shuffle=True, seed=1), partition=name)
    extra = run.filter(pl.col("retriever") == "gamma").select("retriever", "query_id", "doc_id", "rank")
    whole = pl.concat([ranked.select("retriever", "query_id", "doc_id", "rank"), extra])
    return query_ids, qrels, whole, StoredRun(store, ["alpha", "beta"], extra)


def test_slices_read_from_the_store_score_as_the_whole_run(store):
    query_ids, qrels, whole, run = _stored(store)
    plan = mamaretrieval_plan(CUTOFFS, 3, 5)
    assert run.retrievers == ["alpha", "beta", "gamma"]
    assert run.rows_outside(query_ids) == 40
    assert len(run.query_ids()) == 62
    expected = evaluate(whole, qrels, query_ids, plan, run.retrievers, slice_size=len(query_ids))
    sliced = evaluate_slices(
        run.of_queries, qrels, query_ids, plan, run.retrievers, slice_size=7, outside_rows=run.rows_outside(query_ids)
    )
    assert sliced.per_query.equals(expected.per_query)
    assert sliced.per_query.height == 3 * 60 * len(plan.measures())
    assert (
        sliced.dropped
        == expected.dropped
        == {
            "run rows of queries outside the benchmark": 40,
            "qrels of queries outside the benchmark": 0,
        }
    )
    assert sliced.without_results == expected.without_results == {"alpha": 0, "beta": 0, "gamma": 9}  # q000, q007..


def test_a_retrievers_rows_and_the_label_mix_read_in_parts(store):
    _, qrels, whole, run = _stored(store)
    for name in ("alpha", "gamma"):
        got = run.of_retriever(name).sort("query_id", "rank")
        assert got.equals(whole.filter(pl.col("retriever") == name).sort("query_id", "rank"))
    assert run.of_retriever("alpha").height == 62 * 20
    mix = label_mix(run.slices(run.query_ids(), 7), qrels, 3)
    assert mix.equals(label_mix(whole, qrels, 3))
    asked = []

    def qrels_of(ids):
        asked.append(len(ids))
        return qrels.filter(pl.col("query_id").is_in(ids))

    assert label_mix(run.slices(run.query_ids(), 7), qrels_of, 3).equals(mix)
    assert max(asked) == 7 and len(asked) == 9  # 62 queries
    assert mix.group_by("retriever").agg(pl.col("share").sum()).sort("retriever")["share"].to_list() == pytest.approx(
        [1.0, 1.0, 1.0]
    )


def test_missing_partitions_and_reused_names_are_refused(store):
    with pytest.raises(ValueError, match=r"rankings of \['alpha'\] are not in the store"):
        StoredRun(store, ["alpha"])  # no rankings table yet
    _stored(store)
    with pytest.raises(ValueError, match=r"rankings of \['delta'\] are not in the store"):
        StoredRun(store, ["alpha", "delta"])
    clash = pl.DataFrame({"retriever": ["beta"], "query_id": ["q000"], "doc_id": ["d"], "rank": [1]})
    with pytest.raises(ValueError, match=r"run files reuse retriever names of the rankings table: \['beta'\]"):
        StoredRun(store, ["alpha", "beta"], clash)


def test_blocks_come_a_retriever_and_slice_at_a_time_and_read_slices_only(store):
    query_ids, qrels, whole, run = _stored(store)
    plan = mamaretrieval_plan(CUTOFFS, 3, 5)
    asked: list[tuple[str, int]] = []

    def run_of(ids):
        asked.append(("run", len(ids)))
        return run.of_queries(ids)

    def qrels_of(ids):
        asked.append(("qrels", len(ids)))
        return qrels.filter(pl.col("query_id").is_in(ids))

    answered: dict[str, int] = {}
    blocks = list(per_query_blocks(run_of, qrels_of, query_ids, plan, run.retrievers, slice_size=7, answered=answered))
    per_retriever = 60 // 7 + 1  # 9 slices: eight of 7 queries and one of 4
    assert len(blocks) == 3 * per_retriever
    assert [b["retriever"].unique().to_list() for b in blocks] == [
        [r] for r in ("alpha", "beta", "gamma") for _ in range(9)
    ]
    assert max(b["query_id"].n_unique() for b in blocks) == 7 and blocks[8]["query_id"].n_unique() == 4
    assert max(n for _, n in asked) == 7 and len(asked) == 2 * 3 * per_retriever
    assert answered == {"alpha": 60, "beta": 60, "gamma": 51}
    expected = evaluate(whole, qrels, query_ids, plan, run.retrievers, slice_size=len(query_ids))
    assert pl.concat(blocks).equals(expected.per_query)
