"""The pools' reads of the stored rankings: ranks 1..depth of some queries, checks answered by the store, and
the pool built a slice of queries at a time equal to the pool built from every stored row."""

import polars as pl
import pytest

from mama_pipeline.retrieval._pooling import (
    audit_pool,
    check_current,
    pool_pairs,
    pool_slices,
    pool_stats,
    require_retrievers,
    sliced_pool_stats,
)
from mama_pipeline.retrieval._stored_rankings import StoredRankings
from mama_pipeline.store import Store
from mama_pipeline_tests.retrieval.test_pooling import QUERIES, RANKINGS

CHUNKS = pl.DataFrame({"chunk_id": list("abcdefgxyzs")})


@pytest.fixture
def store(tmp_path):
    db = Store(tmp_path / "mama.duckdb")
    for name in ("bm25", "dense", "extra"):
        db.write_table("rankings", RANKINGS.filter(pl.col("retriever") == name), partition=name)
    return db


def test_top_reads_ranks_up_to_depth_of_the_asked_queries_and_retrievers(store):
    top = StoredRankings(store, ["bm25", "dense"]).top(2, ["q1"])
    assert top.columns == ["query_id", "retriever", "rank", "chunk_id"]
    assert sorted(top.rows()) == [
        ("q1", "bm25", 1, "a"),
        ("q1", "bm25", 2, "b"),
        ("q1", "dense", 1, "b"),
        ("q1", "dense", 2, "x"),
    ]
    assert StoredRankings(store, ["bm25"]).top(3, []).height == 0


def test_present_names_the_stored_retrievers_alone(store):
    assert sorted(StoredRankings(store, ["bm25", "sparse", "extra"]).present()) == ["bm25", "extra"]
    with pytest.raises(ValueError, match=r"no rankings for retriever\(s\) \['sparse'\]"):
        require_retrievers(StoredRankings(store, ["bm25", "sparse"]).present(), ["bm25", "sparse"])


def test_present_of_some_queries_names_the_retrievers_that_ranked_them(store):
    extra_q2 = RANKINGS.filter((pl.col("retriever") == "extra") & (pl.col("query_id") == "q2"))
    store.write_table("rankings", extra_q2, partition="extra")  # extra ranked q2 alone
    stored = StoredRankings(store, ["bm25", "sparse", "extra"])
    assert sorted(stored.present(["q1"])) == ["bm25"] and sorted(stored.present(["q1", "q2"])) == ["bm25", "extra"]
    assert stored.present([]) == []


def _message(call) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


def test_check_in_the_store_covers_every_rank_with_the_whole_table_errors(store):
    stored = StoredRankings(store, ["bm25", "dense"])
    stored.check_current(CHUNKS, QUERIES)
    # d is bm25's rank 4 (below any pool depth here), y dense's rank 4: still checked
    for gone in (["d"], ["a"], ["d", "y"], ["s"]):
        chunks = CHUNKS.filter(~pl.col("chunk_id").is_in(gone))
        whole = _message(
            lambda chunks=chunks: check_current(RANKINGS.filter(pl.col("retriever") != "extra"), chunks, QUERIES)
        )
        assert _message(lambda chunks=chunks: stored.check_current(chunks, QUERIES)) == whole
    assert "rankings of ['bm25'] name 1 chunk_id(s)" in _message(
        lambda: stored.check_current(CHUNKS.filter(pl.col("chunk_id") != "d"), QUERIES)
    )
    one_query = QUERIES.filter(pl.col("query_id") == "q1")
    assert "rankings of ['bm25', 'dense'] name 1 query_id(s)" in _message(
        lambda: stored.check_current(CHUNKS, one_query)
    )
    # a retriever not asked for is not checked: z (extra's only chunk) may be gone
    stored.check_current(CHUNKS.filter(pl.col("chunk_id") != "z"), QUERIES)


@pytest.mark.parametrize("include_seed", [True, False])
@pytest.mark.parametrize("per_slice", [1, 2, 5])
def test_pool_slices_from_the_store_equal_the_pool_of_every_stored_row(store, include_seed, per_slice):
    stored = StoredRankings(store, ["bm25", "dense"])
    whole = pool_pairs(store.read_table("rankings"), ["bm25", "dense"], 2, QUERIES, include_seed)  # the old path
    slices = list(pool_slices(lambda ids: stored.top(2, ids), ["bm25", "dense"], 2, QUERIES, include_seed, per_slice))
    assert len(slices) == (2 if per_slice == 1 else 1)
    assert pl.concat(slices).equals(whole)
    stats = sliced_pool_stats(iter(slices), ["bm25", "dense"], 2)
    assert stats == pool_stats(whole, ["bm25", "dense"], 2)
    if include_seed:  # written by hand: q1 a, b, x, s; q2 e, f (seed), g
        assert stats["pairs"] == 7 and stats["queries_in_pool"] == 2 and stats["pool_size_max"] == 4
        assert stats["pool_size_mean"] == 3.5 and stats["seed_pairs"] == 2 and stats["pairs_from/dense"] == 4


def test_no_queries_give_one_empty_slice(store):
    slices = list(
        pool_slices(lambda ids: StoredRankings(store, ["bm25"]).top(2, ids), ["bm25"], 2, QUERIES.head(0), True)
    )
    assert len(slices) == 1 and slices[0].height == 0
    assert sliced_pool_stats(slices, ["bm25"], 0)["queries_in_pool"] == 0


def test_audit_pool_from_the_sampled_queries_rows_equals_the_whole_table_audit(store):
    whole_main = pool_pairs(RANKINGS, ["bm25", "dense"], 2, QUERIES, include_seed=True)
    sample = QUERIES.filter(pl.col("query_id") == "q1")
    before = audit_pool(RANKINGS, ["bm25", "dense", "extra"], 4, sample, True, whole_main)
    stored = StoredRankings(store, ["bm25", "dense", "extra"])
    main = whole_main.filter(pl.col("query_id") == "q1").select("query_id", "chunk_id")
    after = audit_pool(stored.top(4, ["q1"]), ["bm25", "dense", "extra"], 4, sample, True, main, stored.present())
    assert after.equals(before)
    # a retriever stored for other queries only is present: no error (as when every row was read)
    only_q2 = StoredRankings(store, ["bm25", "extra"])
    store.write_table(
        "rankings", RANKINGS.filter((pl.col("retriever") == "extra") & (pl.col("query_id") == "q2")), partition="extra"
    )
    audit_pool(only_q2.top(4, ["q1"]), ["bm25", "extra"], 4, sample, True, main, only_q2.present())
