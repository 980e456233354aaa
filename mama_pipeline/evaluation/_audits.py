"""Audits any benchmark deserves before its figures are trusted.

Truncation audit: the share of documents longer than a model's maximum sequence
length, counted in that model's own tokenizer (special tokens included, as the
model sees them). Leak audit: queries whose text appears verbatim inside one of
their gold (relevant) documents, exactly and after case and whitespace folding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import polars as pl

Tokenizer = Callable[[list[str]], list[int]]  # texts -> token counts


def truncation_audit(
    texts: Sequence[str], count_tokens: Tokenizer, max_length: int, model: str, batch_size: int = 256
) -> dict:
    """Token-length figures of ``texts`` against ``max_length``."""
    counts: list[int] = []
    for start in range(0, len(texts), batch_size):
        counts.extend(count_tokens(list(texts[start : start + batch_size])))
    lengths = np.asarray(counts, dtype=np.int64)
    over = int((lengths > max_length).sum())
    n = int(lengths.size)
    return {
        "model": model,
        "max_length": max_length,
        "documents": n,
        "longer_than_max": over,
        "share_longer_than_max": over / n if n else 0.0,
        "mean_tokens": float(lengths.mean()) if n else 0.0,
        "median_tokens": float(np.median(lengths)) if n else 0.0,
        "p90_tokens": float(np.percentile(lengths, 90)) if n else 0.0,
        "max_tokens": int(lengths.max()) if n else 0,
    }


def encoder_token_counter(spec, resolve: Callable[[str], Path]) -> tuple[Tokenizer, int, str]:
    """(token counter, max sequence length, model label) of a registry retriever whose kind has a tokenizer.

    Counts are the registry's own: document prompt + text, special tokens included.
    """
    from mama_pipeline.retrieval import kind_of, token_counts
    from mama_pipeline.retrieval.settings import kinds_that

    kind = kind_of(spec)
    if not kind.tokenizer:
        usable = " or ".join(kinds_that("tokenizer"))
        raise ValueError(f"retriever {spec.name!r} ({spec.kind}) has no tokenizer to audit; use a {usable} one")
    encoder = kind.encoder(spec.params, resolve)
    prompt = spec.params.document_prompt

    def count(texts: list[str]) -> list[int]:
        return token_counts(encoder.model.tokenizer, prompt, texts).tolist()

    return count, int(encoder.max_seq_length), encoder.source.label


LEAK_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "match": pl.String}


def leak_audit(
    queries: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, min_relevance: int = 1
) -> tuple[dict, pl.DataFrame]:
    """(summary, leaked rows): queries whose text is inside a gold document of theirs.

    ``queries`` (query_id, text), ``corpus`` (doc_id, text), ``qrels`` (query_id, doc_id, relevance).
    """
    return leak_summary([leaks(queries, corpus, qrels, min_relevance)])


def leaks(
    queries: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, min_relevance: int = 1
) -> tuple[pl.DataFrame, int]:
    """(leaked rows, queries with a gold document) of these queries: a part of the leak audit."""
    gold = (
        qrels.filter(pl.col("relevance") >= min_relevance)
        .join(queries.select("query_id", pl.col("text").alias("query_text")), on="query_id")
        .join(corpus.select("doc_id", pl.col("text").alias("doc_text")), on="doc_id")
    )
    rows = []
    fold = functools.cache(_fold)  # a text folded once, however many gold pairs hold it
    for q, d, qt, dt in gold.select("query_id", "doc_id", "query_text", "doc_text").iter_rows():
        if qt.strip() and qt.strip() in dt:
            rows.append((q, d, "exact"))
        elif fold(qt) and fold(qt) in fold(dt):
            rows.append((q, d, "case_whitespace"))
    leaked = pl.DataFrame(rows, schema=LEAK_SCHEMA, orient="row")
    n_queries = queries.join(qrels.filter(pl.col("relevance") >= min_relevance), on="query_id", how="semi").height
    return leaked, n_queries


def leak_summary(parts: Iterable[tuple[pl.DataFrame, int]]) -> tuple[dict, pl.DataFrame]:
    """The leak audit of parts holding disjoint queries (see ``leaks``): (summary, leaked rows)."""
    frames, n_queries = [pl.DataFrame(schema=LEAK_SCHEMA)], 0
    for leaked, n in parts:
        frames.append(leaked)
        n_queries += n
    leaked = pl.concat(frames).sort("query_id", "doc_id")
    summary = {
        "queries_with_gold": n_queries,
        "leaked_exact": leaked.filter(pl.col("match") == "exact")["query_id"].n_unique(),
        "leaked_any": leaked["query_id"].n_unique(),
    }
    return summary, leaked


def _fold(text: str) -> str:
    """Whitespace runs as one space, none at the ends, case folded: ``str.split`` splits at the characters
    ``re``'s ``\\s`` matches (test_audits.py)."""
    return " ".join(text.split()).casefold()
