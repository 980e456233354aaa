"""BEIR benchmarks: read and write the layout, fetch one from the Hugging Face hub.

Layout: ``corpus.jsonl`` ({_id, title, text}), ``queries.jsonl`` ({_id, text,
metadata?}), ``qrels/<split>.tsv`` (header ``query-id corpus-id score``, graded
scores kept). Hub datasets published with ``datasets`` use the same tables as
parquet (``corpus/*.parquet``, ``queries/*.parquet``, ``qrels/<split>-*.parquet``);
both are read. Every bad record is an error naming the file and line (row).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.input_errors import read_parquet, text_lines
from mama_pipeline.common.jsonl import json_lines
from mama_pipeline.evaluation._errors import EvaluationInputError
from mama_pipeline.evaluation._runs import QrelsRows

CORPUS_SCHEMA = {"doc_id": pl.String, "title": pl.String, "text": pl.String}
QUERIES_SCHEMA = {"query_id": pl.String, "text": pl.String, "metadata": pl.String}
QRELS_HEADER = ["query-id", "corpus-id", "score"]
MAMARETRIEVAL_METADATA = ("seed_chunk_id", "source", "tier")  # generated queries' columns kept as metadata
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class BeirBenchmark:
    """One benchmark split; ``queries`` keeps file order, ``metadata`` as a JSON string (or null)."""

    name: str
    corpus: pl.DataFrame
    queries: pl.DataFrame
    qrels: pl.DataFrame
    source: str

    def benchmark_query_ids(self, max_queries: int | None = None) -> list[str]:
        """Queries of the split (those named in its qrels), in file order; the first ``max_queries``."""
        judged = set(self.qrels["query_id"].to_list())
        ids = [q for q in self.queries["query_id"].to_list() if q in judged]
        return ids if max_queries is None else ids[:max_queries]

    def subset(self, query_ids: list[str]) -> BeirBenchmark:
        """The same corpus with only these queries and their qrels."""
        keep = pl.DataFrame({"query_id": query_ids}, schema={"query_id": pl.String})
        queries = self.queries.join(keep, on="query_id", how="semi")
        return BeirBenchmark(
            self.name, self.corpus, queries, self.qrels.join(keep, on="query_id", how="semi"), self.source
        )


@dataclass(frozen=True)
class Preset:
    """A named protocol: which hub dataset, split and how many queries (in file order)."""

    repo_id: str
    split: str
    max_queries: int | None


PRESETS: dict[str, Preset] = {
    # MIRIAD-200k headline protocol: the first 1,000 queries over 200k passages (give the commit in the config).
    "miriad-200k": Preset("tomaarsen/miriad-benchmark-200k", "test", 1000),
}


def read_beir(folder: str | os.PathLike[str], split: str = "test", name: str | None = None) -> BeirBenchmark:
    """Read a BEIR folder (jsonl + tsv, or the hub's parquet tables)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise EvaluationInputError(folder, "BEIR folder does not exist" if not folder.exists() else "is not a folder")
    if (folder / "corpus.jsonl").exists():
        corpus = _read_jsonl(folder / "corpus.jsonl", "corpus")
        queries = _read_jsonl(folder / "queries.jsonl", "queries")
        qrels_path = folder / "qrels" / f"{split}.tsv"
        _split_exists(folder / "qrels", split, f"{split}.tsv", "*.tsv")
        qrels, lines = _read_qrels_tsv(qrels_path)
    else:
        corpus = _read_parquet_table(folder / "corpus", "*.parquet", "corpus")
        queries = _read_parquet_table(folder / "queries", "*.parquet", "queries")
        _split_exists(folder / "qrels", split, f"{split}-*.parquet", "*-*.parquet")
        qrels, qrels_path, lines = _read_parquet_qrels(folder / "qrels", split)
    _check_references(qrels, lines, qrels_path, set(corpus["doc_id"].to_list()), set(queries["query_id"].to_list()))
    return BeirBenchmark(name or folder.name, corpus, queries, qrels, str(folder))


def write_beir(benchmark: BeirBenchmark, folder: str | os.PathLike[str], split: str = "test") -> Path:
    """Write the benchmark as a BEIR folder (replaced atomically)."""
    return write_beir_parts(folder, [benchmark.corpus], [benchmark.queries], [benchmark.qrels], split)


def write_beir_parts(
    folder: str | os.PathLike[str],
    corpus: Iterable[pl.DataFrame],
    queries: Iterable[pl.DataFrame],
    qrels: Iterable[pl.DataFrame],
    split: str = "test",
) -> Path:
    """Write a BEIR folder (replaced atomically) from a benchmark's tables given as parts in file order, each taken
    when its file gets to it; on an error the folder is left as it was."""
    folder = Path(folder)
    with atomic_folder(folder) as tmp:
        with (tmp / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
            for part in corpus:
                for doc_id, title, text in part.select("doc_id", "title", "text").iter_rows():
                    record = {"_id": doc_id, "title": title or "", "text": text}
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        with (tmp / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
            for part in queries:
                for query_id, text, metadata in part.select("query_id", "text", "metadata").iter_rows():
                    record = {"_id": query_id, "text": text}
                    if metadata is not None:
                        record["metadata"] = json.loads(metadata)
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        (tmp / "qrels").mkdir()
        with (tmp / "qrels" / f"{split}.tsv").open("w", encoding="utf-8", newline="\n") as fh:
            fh.write("\t".join(QRELS_HEADER) + "\n")
            for part in qrels:
                for q, d, rel in part.select("query_id", "doc_id", "relevance").iter_rows():
                    fh.write(f"{q}\t{d}\t{rel}\n")
    return folder


def mamaretrieval_documents(chunks: pl.DataFrame) -> pl.DataFrame:
    """Chunks (chunk_id, text) as BEIR documents, sorted by id."""
    return chunks.select(pl.col("chunk_id").alias("doc_id"), pl.lit("").alias("title"), "text").sort("doc_id")


def mamaretrieval_queries(queries: pl.DataFrame) -> pl.DataFrame:
    """Generated queries as BEIR queries sorted by id, with their seed chunk, source and tier as metadata."""
    meta_cols = [c for c in MAMARETRIEVAL_METADATA if c in queries.columns]
    return queries.sort("query_id").select(
        "query_id",
        pl.col("query_text").alias("text"),
        pl.struct(meta_cols)
        .map_elements(lambda s: json.dumps(s, sort_keys=True), return_dtype=pl.String)
        .alias("metadata")
        if meta_cols
        else pl.lit(None, pl.String).alias("metadata"),
    )


def mamaretrieval_labels(qrels: pl.DataFrame, doc_ids: set[str], query_ids: set[str]) -> pl.DataFrame:
    """Qrels sorted by query and document; an error names the first whose document or query is not known."""
    labels = qrels.select("query_id", "doc_id", "relevance").sort("query_id", "doc_id")
    _check_references(labels, None, "judgments", doc_ids, query_ids)
    return labels


def download_beir(repo_id: str, revision: str) -> Path:
    """The snapshot folder of a hub dataset at a pinned commit (found in the cache offline, HF_HUB_OFFLINE=1)."""
    from huggingface_hub import snapshot_download

    if not _SHA.match(revision or ""):
        raise ValueError(f"hub dataset {repo_id}: revision must be a 40-hex commit sha, got {revision!r}")
    return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision))


def _read_jsonl(path: Path, kind: str) -> pl.DataFrame:
    if not path.exists():
        raise EvaluationInputError(path, "file is missing")
    ids: list[str] = []
    texts: list[str] = []
    extra: list[str | None] = []
    seen: set[str] = set()
    for lineno, record in json_lines(path, f"{kind} file", EvaluationInputError):
        ident, text, more = _record_fields(record, kind)
        if ident is None or text is None:
            raise EvaluationInputError(path, "record needs string '_id' and 'text'", lineno)
        if ident in seen:
            raise EvaluationInputError(path, f"duplicate _id {ident!r}", lineno)
        seen.add(ident)
        ids.append(ident)
        texts.append(text)
        extra.append(more)
    if not ids:
        raise EvaluationInputError(path, f"no {kind} records (empty file)")
    return _table(kind, ids, texts, extra)


def _record_fields(record: object, kind: str) -> tuple[str | None, str | None, str | None]:
    if not isinstance(record, dict):
        return None, None, None
    ident, text = record.get("_id"), record.get("text")
    ident = str(ident) if isinstance(ident, (str, int)) else None
    text = text if isinstance(text, str) else None
    if kind == "corpus":
        title = record.get("title")
        return ident, text, title if isinstance(title, str) else ""
    metadata = record.get("metadata")
    return ident, text, None if metadata is None else json.dumps(metadata, sort_keys=True, ensure_ascii=False)


def _table(kind: str, ids: list[str], texts: list[str], extra: list[str | None]) -> pl.DataFrame:
    if kind == "corpus":
        return pl.DataFrame({"doc_id": ids, "title": extra, "text": texts}, schema=CORPUS_SCHEMA)
    return pl.DataFrame({"query_id": ids, "text": texts, "metadata": extra}, schema=QUERIES_SCHEMA)


def _read_qrels_tsv(path: Path) -> tuple[pl.DataFrame, list[int]]:
    if not path.exists():
        raise EvaluationInputError(path, "file is missing")
    rows = QrelsRows(path)
    lines: list[int] = []
    header = None
    for lineno, line in text_lines(path, "qrels file"):
        if lineno == 1:
            if line.split("\t") != QRELS_HEADER:
                raise EvaluationInputError(
                    path, f"header must be {' '.join(QRELS_HEADER)!r} (tab-separated), got {line!r}", 1
                )
            header = line
            continue
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise EvaluationInputError(path, f"expected 3 tab-separated fields, got {len(fields)}: {line!r}", lineno)
        q, d, score = fields
        rows.add(q, d, score, "score", lineno)
        lines.append(lineno)
    if header is None:
        raise EvaluationInputError(path, f"empty qrels file: expected the header {' '.join(QRELS_HEADER)!r}")
    return rows.frame(), lines


def _split_exists(qrels: Path, split: str, pattern: str, any_split: str) -> None:
    """A missing split whose folder holds others names them: ``--split dev`` for a folder with only dev qrels."""
    if not qrels.is_dir() or any(qrels.glob(pattern)):
        return
    names = sorted({p.name.removesuffix(".tsv").split("-")[0] for p in qrels.glob(any_split)} - {split})
    if names:
        raise EvaluationInputError(
            qrels,
            f"no qrels of split {split!r}; the folder has split(s) {', '.join(names)}: pass --split {names[0]} "
            f"(in a configuration, split: {names[0]})",
        )


def _parquet_files(folder: Path, pattern: str, kind: str) -> list[Path]:
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    if not files:
        raise EvaluationInputError(
            folder, f"no {kind} found: expected {kind}.jsonl beside it or {folder.name}/{pattern}"
        )
    return files


def _read_parquet_table(folder: Path, pattern: str, kind: str) -> pl.DataFrame:
    files = _parquet_files(folder, pattern, kind)
    ids: list[str] = []
    texts: list[str] = []
    extra: list[str | None] = []
    seen: set[str] = set()
    for path in files:
        df = read_parquet(path, f"{kind} file")
        for row_no, record in enumerate(df.iter_rows(named=True), start=1):
            ident, text, more = _record_fields(record, kind)
            if ident is None or text is None:
                raise EvaluationInputError(path, f"row {row_no}: record needs string '_id' and 'text'")
            if ident in seen:
                raise EvaluationInputError(path, f"row {row_no}: duplicate _id {ident!r}")
            seen.add(ident)
            ids.append(ident)
            texts.append(text)
            extra.append(more)
    return _table(kind, ids, texts, extra)


def _read_parquet_qrels(folder: Path, split: str) -> tuple[pl.DataFrame, Path, list[int]]:
    files = _parquet_files(folder, f"{split}-*.parquet", f"qrels of split {split!r}")
    frames = []
    for path in files:
        df = read_parquet(path, "qrels file")
        if not set(QRELS_HEADER) <= set(df.columns):
            raise EvaluationInputError(path, f"columns must include {QRELS_HEADER}, got {df.columns}")
        try:
            frames.append(
                df.select(
                    pl.col("query-id").cast(pl.String).alias("query_id"),
                    pl.col("corpus-id").cast(pl.String).alias("doc_id"),
                    pl.col("score").cast(pl.Int64).alias("relevance"),
                )
            )
        except pl.exceptions.PolarsError:
            raise EvaluationInputError(path, f"column 'score' must hold integers, got {df.schema['score']}") from None
    qrels = pl.concat(frames)
    dup = qrels.with_row_index("row").filter(pl.struct("query_id", "doc_id").is_duplicated())
    if dup.height:
        r = dup.row(-1, named=True)
        raise EvaluationInputError(
            folder, f"row {r['row'] + 1}: query {r['query_id']!r} labels document {r['doc_id']!r} twice"
        )
    return qrels, folder, list(range(1, qrels.height + 1))


def _check_references(
    qrels: pl.DataFrame, lines: list[int] | None, source, doc_ids: set[str], query_ids: set[str]
) -> None:
    """Every qrel names a known document and query; ``lines`` are the records' file lines (None: tables)."""
    numbers = lines if lines is not None else [None] * qrels.height
    for (q, d), lineno in zip(qrels.select("query_id", "doc_id").iter_rows(), numbers):
        if d not in doc_ids:
            raise EvaluationInputError(
                source, f"qrels name document {d!r} (query {q!r}) that is not in the corpus", lineno
            )
        if q not in query_ids:
            raise EvaluationInputError(source, f"qrels name query {q!r} that is not in the queries", lineno)
