"""Runs and qrels as polars tables, checked before anything is scored.

A run is ``(retriever, query_id, doc_id, rank)``: the order a retriever returned
is its ``rank`` (1 = first); retriever scores never re-order it, so ties in
score cannot be broken differently by different tools. Qrels are
``(query_id, doc_id, relevance)`` with integer graded labels.
"""

from __future__ import annotations

import polars as pl

from mama_pipeline.common.input_errors import one_line
from mama_pipeline.evaluation._errors import EvaluationInputError

RUN_SCHEMA = {"retriever": pl.String, "query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64}
QRELS_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}


class QrelsRows:
    """Accumulates qrels lines read from ``path``: integer labels, no (query, doc) twice."""

    def __init__(self, path):
        self.path = path
        self.rows: dict[str, list] = {"query_id": [], "doc_id": [], "relevance": []}
        self.seen: set[tuple[str, str]] = set()

    def add(self, query_id: str, doc_id: str, label: str, label_name: str, lineno: int) -> None:
        try:
            value = int(label)
        except ValueError:
            raise EvaluationInputError(self.path, f"{label_name} {label!r} is not an integer", lineno) from None
        if (query_id, doc_id) in self.seen:
            raise EvaluationInputError(self.path, f"query {query_id!r} labels document {doc_id!r} twice", lineno)
        self.seen.add((query_id, doc_id))
        for col, v in zip(self.rows, (query_id, doc_id, value)):
            self.rows[col].append(v)

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=QRELS_SCHEMA)


def check_run(run: pl.DataFrame, source: str = "run") -> pl.DataFrame:
    """The run with its columns typed; errors on nulls, ranks < 1, duplicates."""
    run = _typed(run, RUN_SCHEMA, source)
    bad_rank = run.filter(pl.col("rank") < 1)
    if bad_rank.height:
        row = bad_rank.row(0, named=True)
        raise EvaluationInputError(source, f"rank must be >= 1, got {row['rank']} ({_rec(row)})")
    for keys, what in ((["doc_id"], "document"), (["rank"], "rank")):
        dup = run.filter(pl.struct(["retriever", "query_id", *keys]).is_duplicated())
        if dup.height:
            row = dup.row(0, named=True)
            raise EvaluationInputError(source, f"{what} {row[keys[0]]!r} appears more than once ({_rec(row)})")
    return run


def check_qrels(qrels: pl.DataFrame, source: str = "qrels") -> pl.DataFrame:
    """The qrels with their columns typed; errors on nulls and duplicate pairs."""
    qrels = _typed(qrels, QRELS_SCHEMA, source)
    dup = qrels.filter(pl.struct(["query_id", "doc_id"]).is_duplicated())
    if dup.height:
        row = dup.row(0, named=True)
        raise EvaluationInputError(
            source, f"query {row['query_id']!r} labels document {row['doc_id']!r} more than once"
        )
    return qrels


def rankings_to_run(rankings: pl.DataFrame) -> pl.DataFrame:
    """The retrieval ``rankings`` table (chunk_id) as a run (doc_id)."""
    return rankings.select(
        pl.col("retriever").cast(pl.String),
        pl.col("query_id").cast(pl.String),
        pl.col("chunk_id").cast(pl.String).alias("doc_id"),
        pl.col("rank").cast(pl.Int64),
    )


def _typed(df: pl.DataFrame, schema: dict[str, pl.DataType], source: str) -> pl.DataFrame:
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise EvaluationInputError(source, f"missing columns {missing}; has {df.columns}")
    try:
        df = df.select([pl.col(c).cast(t, strict=True) for c, t in schema.items()])
    except pl.exceptions.InvalidOperationError as exc:
        raise EvaluationInputError(source, f"column types: {one_line(str(exc))}") from None
    nulls = [c for c in schema if df[c].null_count()]
    if nulls:
        row = df.filter(pl.any_horizontal(pl.col(nulls).is_null())).row(0, named=True)
        raise EvaluationInputError(source, f"null values in {nulls} ({_rec(row)})")
    return df


def _rec(row: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in row.items())
