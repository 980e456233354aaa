"""Rankings produced elsewhere (late interaction, on-device models), read from a file and validated.

TREC run files (``query_id Q0 chunk_id rank score tag``) and parquet files with
``query_id, chunk_id, score`` (``rank`` and ``retriever`` optional) are accepted.
Unknown query or chunk ids, a chunk listed twice for a query, a rank used twice,
or a score that is not a finite number fail with one line, ``file:line N: reason``
(parquet: ``file:row N``) for the first problem and the count of the others; the
error's ``problems`` attribute lists them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from mama_pipeline.common.input_errors import InputError, one_line, text_lines

HITS_SCHEMA = {"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64}


class RunImportError(InputError):
    """An imported run that does not fit the corpus and queries: one line; ``problems`` holds every problem."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        super().__init__(message)
        self.problems = list(problems) or [message]


def problem_metadata(problems: Sequence[str], listed: int = 1000) -> dict:
    """Dagster metadata of an imported run's problems: their count and the first ``listed`` of them."""
    import dagster as dg

    shown = "\n".join(f"- `{p}`" for p in problems[:listed])
    more = f"\n- ... and {len(problems) - listed} more" if len(problems) > listed else ""
    return {"problem_count": len(problems), "problems": dg.MetadataValue.md(shown + more)}


def run_format(path: Path, declared: str | None) -> str:
    if declared:
        return declared
    return "parquet" if path.suffix.lower() in (".parquet", ".pq") else "trec"


def read_run(path: Path, fmt: str | None, query_ids: Iterable[str], chunk_ids: Iterable[str]) -> pl.DataFrame:
    """Validated hits (query_id, chunk_id, score) from a run file, in file order."""
    if not path.is_file():
        raise RunImportError(f"{path}: run file does not exist")
    queries, chunks = set(query_ids), set(chunk_ids)
    if run_format(path, fmt) == "parquet":
        return _read_parquet(path, queries, chunks)
    return _read_trec(path, queries, chunks)


class _Problems:
    def __init__(self, path: Path, unit: str):
        self.path, self.unit, self.lines = path, unit, []

    def add(self, where: int, reason: str) -> None:
        self.lines.append(f"{self.path}:{self.unit}{where}: {reason}")

    def raise_any(self) -> None:
        if self.lines:
            more = len(self.lines) - 1
            tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            raise RunImportError(self.lines[0] + tail, self.lines)


def _read_trec(path: Path, queries: set[str], chunks: set[str]) -> pl.DataFrame:
    problems = _Problems(path, "line ")
    rows: list[tuple[str, str, float]] = []
    seen_doc: dict[tuple[str, str], int] = {}
    seen_rank: dict[tuple[str, str], int] = {}
    try:
        for lineno, line in text_lines(path, "run file"):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                problems.add(lineno, f"expected 6 fields (query_id Q0 chunk_id rank score tag), found {len(fields)}")
                continue
            qid, _q0, doc, rank, score_text, _tag = fields
            ok = _check_ids(problems, lineno, qid, doc, queries, chunks)
            try:
                if int(rank) < 1:
                    raise ValueError
            except ValueError:
                problems.add(lineno, f"rank {rank!r} is not a positive integer")
                ok = False
            score = _number(score_text)
            if score is None:
                problems.add(lineno, f"score {score_text!r} is not a finite number")
                ok = False
            ok &= _first(problems, lineno, seen_doc, (qid, doc), f"chunk {doc} listed twice for query {qid}")
            ok &= _first(problems, lineno, seen_rank, (qid, rank), f"rank {rank} used twice for query {qid}")
            if ok:
                rows.append((qid, doc, score))
    except InputError as exc:  # a byte that is not UTF-8, named by its line
        raise RunImportError(str(exc), [str(exc)]) from None
    problems.raise_any()
    return pl.DataFrame(rows, schema=HITS_SCHEMA, orient="row")


def _read_parquet(path: Path, queries: set[str], chunks: set[str]) -> pl.DataFrame:
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - reported with the file name
        raise RunImportError(f"{path}: not a readable parquet file: {one_line(str(exc))[:200]}") from None
    missing = sorted({"query_id", "chunk_id", "score"} - set(frame.columns))
    if missing:
        raise RunImportError(f"{path}: missing column(s) {missing}; need query_id, chunk_id, score (rank optional)")
    if "retriever" in frame.columns and frame["retriever"].n_unique() > 1:
        raise RunImportError(f"{path}: holds several retrievers {sorted(frame['retriever'].unique().to_list())}")
    problems = _Problems(path, "row ")
    seen_doc: dict[tuple[str, str], int] = {}
    seen_rank: dict[tuple[str, str], int] = {}
    rows: list[tuple[str, str, float]] = []
    ranks = frame["rank"] if "rank" in frame.columns else pl.Series([None] * frame.height)
    for row, (qid, doc, score_value, rank) in enumerate(
        zip(frame["query_id"], frame["chunk_id"], frame["score"], ranks), 1
    ):
        qid, doc = str(qid), str(doc)
        ok = _check_ids(problems, row, qid, doc, queries, chunks)
        score = _number(score_value)
        if score is None:
            problems.add(row, f"score {score_value!r} is not a finite number")
            ok = False
        ok &= _first(problems, row, seen_doc, (qid, doc), f"chunk {doc} listed twice for query {qid}")
        if rank is not None:
            ok &= _first(problems, row, seen_rank, (qid, str(rank)), f"rank {rank} used twice for query {qid}")
        if ok:
            rows.append((qid, doc, score))
    problems.raise_any()
    return pl.DataFrame(rows, schema=HITS_SCHEMA, orient="row")


def _check_ids(problems: _Problems, where: int, qid: str, doc: str, queries: set[str], chunks: set[str]) -> bool:
    ok = True
    if qid not in queries:
        problems.add(where, f"unknown query id {qid!r}")
        ok = False
    if doc not in chunks:
        problems.add(where, f"unknown chunk id {doc!r}")
        ok = False
    return ok


def _first(problems: _Problems, where: int, seen: dict, key: tuple, reason: str) -> bool:
    if key in seen:
        problems.add(where, f"{reason} (first at {problems.unit}{seen[key]})")
        return False
    seen[key] = where
    return True


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
