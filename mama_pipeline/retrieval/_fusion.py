"""Reciprocal rank fusion of stored rankings, with pyserini's implementation (no JVM needed)."""

from __future__ import annotations

import polars as pl


def rrf_hits(rankings: pl.DataFrame, runs: list[str], rrf_k: int, depth: int | None) -> pl.DataFrame:
    """Fused hits (query_id, chunk_id, score = sum of 1 / (rrf_k + rank)) over ``runs``; a run without rows (for
    these queries) adds nothing, as it adds nothing to a query it did not rank."""
    from pyserini.fusion import reciprocal_rank_fusion
    from pyserini.trectools import TrecRun

    trec_runs = []
    for name in runs:
        run = TrecRun()
        run.run_data = (
            rankings.filter(pl.col("retriever") == name)
            .sort("query_id", "rank")
            .select(topic="query_id", q0=pl.lit("Q0"), docid="chunk_id", rank="rank", score="score", tag=pl.lit(name))
            .to_pandas()
        )
        trec_runs.append(run)
    fused = reciprocal_rank_fusion(trec_runs, rrf_k=rrf_k, depth=depth, k=None).run_data
    return pl.from_pandas(fused[["topic", "docid", "score"]]).select(
        query_id=pl.col("topic").cast(pl.String),
        chunk_id=pl.col("docid").cast(pl.String),
        score=pl.col("score").cast(pl.Float64),
    )
