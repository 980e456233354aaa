"""Submission files, read and checked before anything is stored: a bad file is one line naming file and line.

- A TREC run (``qid Q0 docid rank score tag``; :func:`mama_pipeline.evaluation._trec.read_trec_run` checks the
  columns, the scores and duplicate (qid, docid) pairs) or a BEIR-layout results file (JSON
  ``{query_id: {doc_id: score}}``), checked against the release's query ids and the corpus's chunk ids.
- An answers file (JSONL ``{"item_id", "answer", optional "cited_chunk_ids"}``), checked against the mamabench
  item ids and the corpus's chunk ids.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import polars as pl

from mama_pipeline.common.input_errors import InputError, at, read_text, text_lines
from mama_pipeline.common.jsonl import json_lines
from mama_pipeline.evaluation import read_trec_run

KINDS = ("retrieval", "answers")
ANSWER_KEYS = {"item_id", "answer", "cited_chunk_ids"}
ANSWER_SCHEMA = {"item_id": pl.String, "answer": pl.String, "cited_chunk_ids": pl.List(pl.String), "line": pl.Int64}


def submission_id(kind: str, data: bytes) -> str:
    """``sub-`` + the first 16 hex of sha256 over the kind and the file's bytes: one file, one submission."""
    if kind not in KINDS:
        raise ValueError(f"submission kind must be one of {KINDS}, got {kind!r}")
    return "sub-" + hashlib.sha256(kind.encode() + b"\0" + data).hexdigest()[:16]


def read_run_file(path: str | os.PathLike[str], query_ids: set[str], chunk_ids: set[str]) -> pl.DataFrame:
    """The run (query_id, doc_id, rank, score) of a TREC or BEIR-layout file, every id known.

    A file whose first non-blank character is ``{`` is BEIR-layout JSON, otherwise TREC. Ranks follow
    trec_eval's order (score descending, then doc id descending), as the project's TREC reader does.
    """
    path = Path(path)
    text = read_text(path, "run file")  # non-UTF-8 bytes: an error naming the line
    if text.lstrip().startswith("{"):
        run = _beir_results(path, text)
    else:
        run = read_trec_run(path, retriever="submission").drop("retriever")
    _known_ids(path, text, run, query_ids, chunk_ids)
    return run


def _beir_results(path: Path, text: str) -> pl.DataFrame:
    def no_duplicates(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise InputError(at(path, f"key {key!r} appears twice in one object", _line_of(text, key, 2)))
            seen.add(key)
        return dict(pairs)

    try:
        data = json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise InputError(at(path, f"not JSON: {exc.msg}", exc.lineno)) from None
    if not isinstance(data, dict) or not data:
        raise InputError(at(path, "a BEIR-layout results file is a non-empty object {query_id: {doc_id: score}}"))
    rows = {"query_id": [], "doc_id": [], "score": []}
    for qid, docs in data.items():
        if not isinstance(docs, dict):
            raise InputError(at(path, f"query {qid!r}: expected an object {{doc_id: score}}", _line_of(text, qid)))
        for doc, score in docs.items():
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise InputError(
                    at(
                        path,
                        f"query {qid!r}, document {doc!r}: score {score!r} is not a number",
                        _line_of(text, doc, after=qid),
                    )
                )
            rows["query_id"].append(qid)
            rows["doc_id"].append(doc)
            rows["score"].append(float(score))
    run = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})
    run = run.sort(["query_id", "score", "doc_id"], descending=[False, True, True])
    run = run.with_columns((pl.int_range(pl.len()).over("query_id") + 1).cast(pl.Int64).alias("rank"))
    return run.select("query_id", "doc_id", "rank", "score")


def _line_of(text: str, key: str, nth: int = 1, after: str | None = None) -> int | None:
    """The line of the ``nth`` occurrence of the JSON string ``key`` (after the first one of ``after``)."""
    start = text.find(json.dumps(after)) if after is not None else 0
    needle, pos = json.dumps(key), max(start, 0)
    for _ in range(nth):
        pos = text.find(needle, pos)
        if pos < 0:
            return None
        pos += 1
    return text.count("\n", 0, pos) + 1


def _known_ids(path: Path, text: str, run: pl.DataFrame, query_ids: set[str], chunk_ids: set[str]) -> None:
    """An error naming the first line with a query id outside the release or a chunk id outside the corpus."""
    bad_q = run.filter(~pl.col("query_id").is_in(list(query_ids)))
    bad_d = run.filter(~pl.col("doc_id").is_in(list(chunk_ids)))
    if bad_q.is_empty() and bad_d.is_empty():
        return
    trec = not text.lstrip().startswith("{")
    for what, bad, col in (("query id", bad_q, "query_id"), ("chunk id", bad_d, "doc_id")):
        if bad.is_empty():
            continue
        value = bad[col][0]
        if trec:
            field = 0 if col == "query_id" else 2
            line = next(
                n
                for n, fields in ((n, t.split()) for n, t in text_lines(path))
                if len(fields) > field and fields[field] == value
            )
        else:
            line = _line_of(text, value, after=None if col == "query_id" else bad["query_id"][0])
        where = (
            "the release's queries (main track, robustness variants, multi-passage questions)"
            if col == "query_id"
            else "the corpus"
        )
        raise InputError(at(path, f"unknown {what} {value!r}: not in {where}", line))


def read_answers_file(path: str | os.PathLike[str], item_ids: set[str], chunk_ids: set[str]) -> pl.DataFrame:
    """The answers (item_id, answer, cited_chunk_ids, line): every item known, once; answers strings."""
    path = Path(path)
    rows: dict[str, list] = {k: [] for k in ANSWER_SCHEMA}
    seen: dict[str, int] = {}
    for lineno, record in json_lines(path, "answers file"):
        if not isinstance(record, dict):
            raise InputError(at(path, 'expected an object {"item_id", "answer", "cited_chunk_ids"}', lineno))
        extra = sorted(set(record) - ANSWER_KEYS)
        if extra or "item_id" not in record or "answer" not in record:
            raise InputError(
                at(path, f"keys must be item_id, answer and optionally cited_chunk_ids; got {sorted(record)}", lineno)
            )
        item, answer, cited = record["item_id"], record["answer"], record.get("cited_chunk_ids", [])
        if not isinstance(item, str) or item not in item_ids:
            raise InputError(at(path, f"unknown item id {item!r}: not a mamabench item", lineno))
        if item in seen:
            raise InputError(at(path, f"item {item!r} answered twice (first on line {seen[item]})", lineno))
        if not isinstance(answer, str):
            raise InputError(at(path, f"item {item!r}: answer must be a string, got {type(answer).__name__}", lineno))
        if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
            raise InputError(at(path, f"item {item!r}: cited_chunk_ids must be a list of chunk ids", lineno))
        unknown = [c for c in cited if c not in chunk_ids]
        if unknown:
            raise InputError(at(path, f"item {item!r}: unknown chunk id {unknown[0]!r}: not in the corpus", lineno))
        seen[item] = lineno
        for key, value in zip(rows, (item, answer, cited, lineno)):
            rows[key].append(value)
    if not seen:
        raise InputError(at(path, "empty answers file: no answers to read"))
    return pl.DataFrame(rows, schema=ANSWER_SCHEMA)
