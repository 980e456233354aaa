"""The rankings table every retriever writes, in trec_eval's order.

trec_eval ignores the rank column and orders a query's documents by score
descending, then by document id descending; ranks here are positions in that
order, so our ranks and trec_eval's agree, and the top-k cut keeps the first k.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.store.table_schema import table_schema

RANKINGS_SCHEMA = table_schema("rankings")


def order_rankings(hits: pl.DataFrame, retriever: str, k: int) -> pl.DataFrame:
    """Scored hits (query_id, chunk_id, score) -> the rankings table, top ``k`` per query.

    Each (query, chunk) must appear once with a finite score; hits beyond ``k`` are cut
    (callers count them).
    """
    bad = hits.filter(~pl.col("score").cast(pl.Float64).is_finite())
    if bad.height:
        first = bad.row(0, named=True)
        raise ValueError(
            f"retriever {retriever!r}: non-finite score {first['score']} for query {first['query_id']}, "
            f"chunk {first['chunk_id']}"
        )
    dupes = hits.select("query_id", "chunk_id").is_duplicated()
    if dupes.any():
        first = hits.filter(dupes).row(0, named=True)
        raise ValueError(
            f"retriever {retriever!r}: chunk {first['chunk_id']} scored twice for query {first['query_id']}"
        )
    return (
        hits.select(
            pl.col("query_id").cast(pl.String),
            pl.col("chunk_id").cast(pl.String),
            pl.col("score").cast(pl.Float64),
        )
        .sort(["query_id", "score", "chunk_id"], descending=[False, True, True])
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_id"), retriever=pl.lit(retriever))
        .filter(pl.col("rank") <= k)
        .select(list(RANKINGS_SCHEMA))
    )


def empty_rankings() -> pl.DataFrame:
    return pl.DataFrame(schema=RANKINGS_SCHEMA)


def hits_from_matrix(query_ids: list[str], chunk_ids: np.ndarray, scores: np.ndarray, idx: np.ndarray) -> pl.DataFrame:
    """Row-per-query search results (scores, chunk positions; -1 = no hit) -> long hits."""
    n, depth = idx.shape
    flat = idx.reshape(-1)
    keep = flat >= 0
    return pl.DataFrame(
        {
            "query_id": np.repeat(np.asarray(query_ids, dtype=object), depth)[keep],
            "chunk_id": chunk_ids[flat[keep]],
            "score": scores.reshape(-1)[keep].astype(np.float64),
        },
        schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64},
    )


def ranking_violations(rankings: pl.DataFrame) -> pl.DataFrame:
    """Rows breaking the contract: ranks not 1..n, order not (score desc, chunk_id desc), repeated chunks."""
    checked = rankings.sort(["retriever", "query_id", "rank"]).with_columns(
        expected_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("retriever", "query_id"),
        prev_score=pl.col("score").shift(1).over("retriever", "query_id"),
        prev_chunk=pl.col("chunk_id").shift(1).over("retriever", "query_id"),
    )
    out_of_order = (pl.col("prev_score") < pl.col("score")) | (
        (pl.col("prev_score") == pl.col("score")) & (pl.col("prev_chunk") <= pl.col("chunk_id"))
    )
    repeated = pl.struct("retriever", "query_id", "chunk_id").is_duplicated()
    return checked.filter((pl.col("rank") != pl.col("expected_rank")) | out_of_order.fill_null(False) | repeated)
