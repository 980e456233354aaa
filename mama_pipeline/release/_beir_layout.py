"""The BEIR/MTEB retrieval triple of a track as hub configurations, in the MIRIAD-200k layout.

Files (parquet, like a dataset pushed to the hub, so ``datasets``, MTEB and
``evaluation.read_beir`` read the folder as it is)::

    corpus/corpus-00000-of-00001.parquet      _id, title (empty), text     config corpus, split corpus
    queries/queries-00000-of-00001.parquet    _id, text                    config queries, split queries
    qrels/test-00000-of-00001.parquet         query-id, corpus-id, score   config qrels, split test

A track other than the main one (``robustness``, ``multipassage``) ships its
queries and qrels under ``<track>/beir/`` as configs ``<track>-queries`` and
``<track>-qrels``, and ``<track>-corpus`` names the main corpus file: MTEB
reads ``<subset>-corpus``, ``<subset>-queries`` and ``<subset>-qrels`` for an
``hf_subset``. ``score`` is the judge's graded 0..6 label of every judged pair
(0 included). ``title`` is empty so that every tool embeds exactly the chunk text
that was retrieved and judged (MTEB and BEIR prepend a non-empty title).

The tables keep the rows in the order given (frames or lazy frames): callers pass chunks sorted by chunk id,
queries by query id and labels by (query id, chunk id), the order of every file of the triple.
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

from mama_pipeline.release._configurations import ViewerConfig

CORPUS = "corpus/corpus-00000-of-00001.parquet"
QUERIES = "queries/queries-00000-of-00001.parquet"
QRELS = "qrels/test-00000-of-00001.parquet"
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def corpus_table(chunks: Frame) -> Frame:
    return chunks.select(
        pl.col("chunk_id").cast(pl.String).alias("_id"),
        pl.lit("", dtype=pl.String).alias("title"),
        pl.col("text").cast(pl.String),
    )


def queries_table(queries: Frame) -> Frame:
    """``queries``: query_id, query_text."""
    return queries.select(
        pl.col("query_id").cast(pl.String).alias("_id"), pl.col("query_text").cast(pl.String).alias("text")
    )


def qrels_table(labels: Frame) -> Frame:
    """``labels``: query_id, chunk_id, score (the graded label)."""
    return labels.select(
        pl.col("query_id").cast(pl.String).alias("query-id"),
        pl.col("chunk_id").cast(pl.String).alias("corpus-id"),
        pl.col("score").cast(pl.Int32),
    )


def triple_configs(track: str | None, what: str) -> tuple[ViewerConfig, ...]:
    """The triple's configs (MIRIAD-200k's split names); another track's corpus config names the main corpus."""
    prefix, name = _prefix(track)
    return (
        ViewerConfig(f"{name}corpus", CORPUS, "BEIR/MTEB corpus: _id, title (empty), text", "corpus"),
        ViewerConfig(f"{name}queries", prefix + QUERIES, f"BEIR/MTEB queries ({what}): _id, text", "queries"),
        ViewerConfig(
            f"{name}qrels",
            prefix + QRELS,
            f"BEIR/MTEB qrels ({what}): query-id, corpus-id, score (graded 0-6 label)",
            "test",
        ),
    )


def triple_tables(track: str | None, queries: Frame, labels: Frame, chunks: Frame | None = None) -> dict[str, Frame]:
    """The triple's tables (path -> frame); the main track (``track`` None) also writes the corpus from ``chunks``."""
    prefix, _ = _prefix(track)
    tables = {prefix + QUERIES: queries_table(queries), prefix + QRELS: qrels_table(labels)}
    return tables if track is not None else {CORPUS: corpus_table(chunks), **tables}


def _prefix(track: str | None) -> tuple[str, str]:
    return ("", "") if track is None else (f"{track}/beir/", f"{track}-")
