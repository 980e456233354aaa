"""Fill small synthetic frames up to the stored contract of the real upstream assets."""

from __future__ import annotations

import polars as pl


def as_corpus_chunks(df: pl.DataFrame) -> pl.DataFrame:
    """chunk_id, text, source[, page, corpus_version] -> the corpus_chunks table's columns."""
    n = df.height
    return df.select("chunk_id", "text", "source").with_columns(
        page=df["page"] if "page" in df.columns else pl.Series([1] * n),
        breadcrumb=pl.Series([["Synthetic section"]] * n, dtype=pl.List(pl.String)),
        given_cid=pl.lit(None, dtype=pl.String),
        line=pl.int_range(1, n + 1),
        ordinal=pl.int_range(0, n),
        corpus_version=df["corpus_version"] if "corpus_version" in df.columns else pl.lit("v-test"),
    )


def as_generated_queries(df: pl.DataFrame, seed_chunk_ids: list[str] | None = None) -> pl.DataFrame:
    """query_id, query_text, tier[, source] -> the generated_queries table's columns."""
    n = df.height
    seeds = seed_chunk_ids or [f"seed{i:012d}" for i in range(n)]
    return df.select("query_id", "query_text", "tier").with_columns(
        seed_chunk_id=pl.Series(seeds[:n], dtype=pl.String),
        source=df["source"] if "source" in df.columns else pl.lit("src-a"),
        model=pl.lit("fake-writer"),
        prompt_hash=pl.lit("0" * 16),
        temperature=pl.lit(0.0),
        reason=pl.lit(None, dtype=pl.String),
        corpus_version=pl.lit("v-test"),
    )
