"""TREC run files (``qid Q0 docid rank score tag``) and qrels files (``qid iter docid rel``).

trec_eval ignores the rank column of a run and orders each query by score
(descending), breaking ties by document id (descending). The reader re-derives
ranks that way, so figures computed from a read run equal trec_eval's on the
same file. The writer keeps the order of the ``rank`` column: it writes the
retriever's scores when they strictly decrease down every ranking and
rank-derived scores otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import polars as pl

from mama_pipeline.common.file_ops import atomic_file
from mama_pipeline.common.input_errors import text_lines
from mama_pipeline.evaluation._errors import EvaluationInputError
from mama_pipeline.evaluation._runs import QrelsRows, check_qrels, check_run


def read_trec_run(path: str | os.PathLike[str], retriever: str | None = None) -> pl.DataFrame:
    """A run table (retriever, query_id, doc_id, rank, score); ``retriever`` overrides the tag column."""
    rows: dict[str, list] = {"retriever": [], "query_id": [], "doc_id": [], "score": []}
    seen: set[tuple[str, str, str]] = set()
    for lineno, fields in _lines(path, "run"):
        if len(fields) != 6:
            raise EvaluationInputError(
                path, f"expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}", lineno
            )
        qid, _, doc, rank, score, tag = fields
        try:
            int(rank)
            value = float(score)
        except ValueError:
            raise EvaluationInputError(
                path, f"rank {rank!r} must be an integer and score {score!r} a number", lineno
            ) from None
        name = retriever or tag
        if (name, qid, doc) in seen:
            raise EvaluationInputError(path, f"document {doc!r} appears twice for query {qid!r}", lineno)
        seen.add((name, qid, doc))
        for col, v in zip(rows, (name, qid, doc, value)):
            rows[col].append(v)
    run = pl.DataFrame(
        rows, schema={"retriever": pl.String, "query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}
    )
    run = run.sort(["retriever", "query_id", "score", "doc_id"], descending=[False, False, True, True])
    run = run.with_columns((pl.int_range(pl.len()).over("retriever", "query_id") + 1).cast(pl.Int64).alias("rank"))
    return run.select("retriever", "query_id", "doc_id", "rank", "score")


def write_trec_run(run: pl.DataFrame, path: str | os.PathLike[str]) -> bool:
    """Write a run (with or without a ``score`` column); True when scores were rank-derived."""
    checked = check_run(run, str(path))
    if "score" in run.columns:
        checked = checked.join(
            run.select("retriever", "query_id", pl.col("doc_id").cast(pl.String), "score"),
            on=["retriever", "query_id", "doc_id"],
        )
    checked = checked.sort("retriever", "query_id", "rank")
    rank_derived = (
        "score" not in checked.columns
        or checked["score"].null_count() > 0
        or bool(checked.select((pl.col("score").diff().over("retriever", "query_id") >= 0).any()).item())
    )
    if rank_derived:
        checked = checked.with_columns((1.0 / pl.col("rank")).alias("score"))
    rows = checked.select("query_id", "doc_id", "rank", "score", "retriever").iter_rows()
    with atomic_file(path) as fh:
        fh.writelines(f"{q} Q0 {d} {rank} {score!r} {name}\n" for q, d, rank, score, name in rows)
    return rank_derived


def read_trec_qrels(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A qrels table (query_id, doc_id, relevance); graded labels kept."""
    rows = QrelsRows(path)
    for lineno, fields in _lines(path, "qrels"):
        if len(fields) != 4:
            raise EvaluationInputError(path, f"expected 4 fields 'qid iter docid rel', got {len(fields)}", lineno)
        qid, _, doc, rel = fields
        rows.add(qid, doc, rel, "relevance", lineno)
    return rows.frame()


def write_trec_qrels(qrels: pl.DataFrame | Iterable[pl.DataFrame], path: str | os.PathLike[str]) -> None:
    """Write qrels, a table or its parts in order (each checked as it comes; a pair repeated in two parts is not
    seen); on an error no file is written."""
    with atomic_file(path) as fh:
        for part in [qrels] if isinstance(qrels, pl.DataFrame) else qrels:
            for q, d, rel in check_qrels(part, str(path)).iter_rows():
                fh.write(f"{q} 0 {d} {rel}\n")


def _lines(path: str | os.PathLike[str], what: str):
    """(line number, whitespace-split fields) of the non-blank lines of a file; an empty file is an error."""
    empty = True
    for lineno, line in text_lines(path, f"{what} file"):
        fields = line.split()
        if fields:
            empty = False
            yield lineno, fields
    if empty:
        raise EvaluationInputError(path, f"empty {what} file: no lines to read")
