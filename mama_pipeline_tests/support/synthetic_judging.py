"""Deterministic synthetic queries, chunks and pools for the judging tests and benchmarks."""

from __future__ import annotations

import hashlib
import json

import polars as pl

from mama_pipeline.judging._rubric import render_pair

TIERS = ("very_high", "high", "moderate")


def chunk_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_queries(n: int) -> pl.DataFrame:
    ids = [f"q_{i:05d}" for i in range(1, n + 1)]
    return pl.DataFrame(
        {
            "query_id": ids,
            "query_text": [f"What dose of drug {i} is given after birth?" for i in range(1, n + 1)],
            "seed_chunk_id": [None] * n,
            "source": ["src-a"] * n,
            "tier": [TIERS[i % len(TIERS)] for i in range(n)],
        },
        schema_overrides={"seed_chunk_id": pl.String},
    )


def make_chunks(n: int, version: str = "v1", texts: dict[int, str] | None = None) -> pl.DataFrame:
    """``n`` chunks; ``texts`` overrides the text of some chunk numbers."""
    texts = texts or {}
    body = [texts.get(j, f"Passage {j}: give drug {j % 7} {j % 5 + 1} mg by mouth twice daily.") for j in range(n)]
    return pl.DataFrame(
        {
            "chunk_id": [chunk_id(t) for t in body],
            "text": body,
            "source": ["src-a"] * n,
            "page": list(range(1, n + 1)),
            "tier": [TIERS[j % len(TIERS)] for j in range(n)],
            "corpus_version": [version] * n,
        }
    )


def make_pool(queries: pl.DataFrame, chunks: pl.DataFrame, per_query: int, offset: int = 0) -> pl.DataFrame:
    """Each query paired with ``per_query`` consecutive chunks, wrapping around the corpus."""
    qids, cids = queries.get_column("query_id").to_list(), chunks.get_column("chunk_id").to_list()
    rows = [(q, cids[(i * 3 + k + offset) % len(cids)]) for i, q in enumerate(qids) for k in range(per_query)]
    pool = pl.DataFrame(rows, schema={"query_id": pl.String, "chunk_id": pl.String}, orient="row").unique(
        maintain_order=True
    )
    return pool.with_columns(
        retrievers=pl.lit(["bm25"]),
        best_rank=pl.int_range(1, pl.len() + 1).over("query_id").cast(pl.Int32),
        is_seed=pl.lit(False),
        pool_size=pl.len().over("query_id").cast(pl.Int32),
    )


def request_digests(pairs: pl.DataFrame, queries: pl.DataFrame, chunks: pl.DataFrame) -> dict[str, tuple[str, str]]:
    """The fake server's request digest of each pair (as listed in its /stats)."""
    rows = (
        pairs.select("query_id", "chunk_id")
        .join(queries, on="query_id")
        .join(chunks.select("chunk_id", "text", pl.col("source").alias("chunk_source"), "page"), on="chunk_id")
    )
    out = {}
    for r in rows.iter_rows(named=True):
        messages = render_pair(r["query_text"], r["chunk_source"], r["page"], r["text"])
        out[hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()] = (r["query_id"], r["chunk_id"])
    return out
