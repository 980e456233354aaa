"""Pool union and depth, seed chunks, pool sizes, the stratified audit sample and audit pool."""

import polars as pl
import pytest

from mama_pipeline.retrieval._pooling import (
    audit_pool,
    check_current,
    largest_remainder,
    pool_pairs,
    pool_stats,
    stratified_query_sample,
)
from mama_pipeline.retrieval._retriever_rankings import order_rankings


def ranking(name, per_query):
    rows = [(q, c, float(len(cs) - i)) for q, cs in per_query.items() for i, c in enumerate(cs)]
    hits = pl.DataFrame(rows, schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64}, orient="row")
    return order_rankings(hits, name, 100)


RANKINGS = pl.concat(
    [
        ranking("bm25", {"q1": ["a", "b", "c", "d"], "q2": ["e", "f"]}),
        ranking("dense", {"q1": ["b", "x", "a", "y"], "q2": ["f", "g"]}),
        ranking("extra", {"q1": ["z"], "q2": ["z"]}),
    ]
)
QUERIES = pl.DataFrame(
    {"query_id": ["q1", "q2"], "query_text": ["..", ".."], "seed_chunk_id": ["s", "f"], "tier": ["high", "low"]}
)


def test_union_of_top_k_with_contributors_and_depth():
    pool = pool_pairs(RANKINGS, ["bm25", "dense"], 2, QUERIES, include_seed=False)
    q1 = pool.filter(pl.col("query_id") == "q1")
    assert q1["chunk_id"].to_list() == ["a", "b", "x"]  # depth 2: c, d (bm25) and a@3, y (dense) stay out
    assert q1["retrievers"].to_list() == [["bm25"], ["bm25", "dense"], ["dense"]]
    assert q1["best_rank"].to_list() == [1, 1, 2]
    assert set(q1["pool_size"]) == {3}
    assert "z" not in pool["chunk_id"].to_list()  # "extra" is not pooled


def test_seed_chunk_joins_the_pool_once():
    pool = pool_pairs(RANKINGS, ["bm25", "dense"], 2, QUERIES, include_seed=True)
    seed_only = pool.filter(pl.col("chunk_id") == "s").row(0, named=True)
    assert seed_only["retrievers"] == [] and seed_only["best_rank"] is None and seed_only["is_seed"]
    f = pool.filter((pl.col("query_id") == "q2") & (pl.col("chunk_id") == "f")).row(0, named=True)
    assert f["is_seed"] and f["retrievers"] == ["bm25", "dense"]  # seed already retrieved: one pair
    assert pool.filter(pl.col("query_id") == "q1")["pool_size"][0] == 4
    assert pool.filter(pl.col("query_id") == "q2").height == 3
    stats = pool_stats(pool, ["bm25", "dense"], 2)
    assert stats["pairs"] == 7 and stats["seed_pairs"] == 2 and stats["seed_pairs_retrieved"] == 1
    assert stats["pairs_only_from/dense"] == 2  # x, g


def test_missing_retriever_rankings_fail():
    with pytest.raises(ValueError, match=r"no rankings for retriever\(s\) \['sparse'\]"):
        pool_pairs(RANKINGS, ["bm25", "sparse"], 2, QUERIES, include_seed=False)


def test_stale_rankings_and_lost_seeds_fail():
    chunks = pl.DataFrame({"chunk_id": list("abcdefgxyzs")})
    check_current(RANKINGS, chunks, QUERIES)
    with pytest.raises(ValueError, match=r"rankings of \['bm25', 'dense'\] name 1 chunk_id"):
        check_current(RANKINGS, chunks.filter(pl.col("chunk_id") != "a"), QUERIES)
    with pytest.raises(ValueError, match="seed chunk missing"):
        check_current(RANKINGS, chunks.filter(pl.col("chunk_id") != "s"), QUERIES)


def test_largest_remainder():
    assert largest_remainder({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    assert largest_remainder({"a": 2, "b": 1}, 2) == {"a": 1, "b": 1}  # remainders .33 vs .67
    assert sum(largest_remainder({"a": 7, "b": 7, "c": 7}, 10).values()) == 10


def test_stratified_sample_is_proportional_seeded_and_stable_per_tier():
    queries = pl.DataFrame(
        {
            "query_id": [f"q{i:03d}" for i in range(100)],
            "tier": ["very_high"] * 60 + ["high"] * 30 + ["low"] * 10,
        }
    )
    sample = stratified_query_sample(queries, 10, seed=0)
    assert dict(sample.group_by("tier").agg(pl.len()).iter_rows()) == {"very_high": 6, "high": 3, "low": 1}
    assert sample.equals(stratified_query_sample(queries, 10, seed=0))
    assert not sample.equals(stratified_query_sample(queries, 10, seed=1))
    # another tier's size does not change which queries a tier draws
    more_low = pl.concat([queries, pl.DataFrame({"query_id": ["z1"], "tier": ["low"]})])
    again = stratified_query_sample(more_low, 10, seed=0)
    assert (
        again.filter(pl.col("tier") == "high")["query_id"].to_list()
        == sample.filter(pl.col("tier") == "high")["query_id"].to_list()
    )
    assert stratified_query_sample(queries, 500, seed=0).height == 100


def test_audit_pool_is_wider_and_flags_main_pool_pairs():
    main = pool_pairs(RANKINGS, ["bm25", "dense"], 2, QUERIES, include_seed=True)
    sample = QUERIES.filter(pl.col("query_id") == "q1")
    wide = audit_pool(RANKINGS, ["bm25", "dense", "extra"], 4, sample, True, main)
    assert set(wide["query_id"]) == {"q1"}
    assert set(wide["chunk_id"]) == {"a", "b", "c", "d", "x", "y", "z", "s"}
    assert set(wide.filter(pl.col("in_main_pool"))["chunk_id"]) == {"a", "b", "x", "s"}
