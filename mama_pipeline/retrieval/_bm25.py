"""BM25 with pyserini (Lucene): an index of the canonical chunk text, cached on disk.

The index folder is named by corpus version and a digest of the analyzer
settings and of the chunk texts, so a changed corpus or analyzer builds a new
index and an unchanged one is reused. Scores are Anserini's: rounded to 1e-4,
with exact ties separated by 1e-6 steps in ascending chunk-id order.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import Field

from mama_pipeline.common.progress import track
from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval._java import anserini_class, java_list

# queries per batch_search call, one searcher for all: the hits (Java objects and their Python wrappers) of one
# slice are held at a time, not those of every query. The 10,371 robustness variants of the paper's scale against
# its index, peak RSS of the process: 2,084 MiB in one call, 1,524 MiB in slices of 1,000, 1,302 in slices of 250
# (and no slower), 1,224 in slices of 100 (docs/scale-out.md)
SEARCH_SLICE = 250


class Bm25Params(Section):
    stemmer: Literal["porter", "krovetz", "none"] = "porter"
    stopwords: bool = True  # drop Lucene's English stopwords
    k1: float = Field(0.9, gt=0)
    b: float = Field(0.4, ge=0, le=1)
    threads: int = Field(2, ge=1)  # indexing and search threads
    input_files: int = Field(8, ge=1)  # JsonCollection files; Anserini hands out work per file
    # the JVM's heap bound (-Xmx), MiB, set by the first BM25 use in a process; Lucene's indexing buffer gets
    # half of it. None: Java's default, a quarter of the machine's memory
    java_heap_mb: int | None = Field(1024, ge=256)


def index_name(chunks: pl.DataFrame, params: Bm25Params, corpus_version: str) -> str:
    """``<corpus_version>-<digest of analyzer settings and chunk texts>``."""
    h = hashlib.sha256(json.dumps({"stemmer": params.stemmer, "stopwords": params.stopwords}).encode())
    for chunk_id, text in chunks.select("chunk_id", "text").sort("chunk_id").iter_rows():
        h.update(chunk_id.encode() + b"\0" + text.encode() + b"\0")
    return f"{corpus_version}-{h.hexdigest()[:16]}"


def ensure_index(
    chunks: pl.DataFrame, params: Bm25Params, corpus_version: str, root: Path, log: Callable[[str], None] = print
) -> tuple[Path, bool]:
    """The index folder for these chunks (built when missing) and whether it was built now."""
    target = root / index_name(chunks, params, corpus_version)
    if any(target.glob("segments_*")):
        return target, False
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
    try:
        docs = work / "docs"
        write_collection(chunks, docs, params.input_files)
        log(f"bm25: indexing {chunks.height} chunks into {target}")
        with track("bm25 index", total=chunks.height, unit="chunks", heartbeat=True) as bar:
            build_index(docs, work / "index", params)
            bar.update(chunks.height)
        n_docs = indexed_documents(work / "index", params)
        if n_docs != chunks.height:
            raise RuntimeError(f"bm25 index {target}: {n_docs} documents indexed, {chunks.height} chunks given")
        try:
            os.rename(work / "index", target)
        except OSError:
            if not any(target.glob("segments_*")):  # not a concurrent build of the same index
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target, True


def write_collection(chunks: pl.DataFrame, folder: Path, n_files: int) -> None:
    """Anserini JsonCollection input: ``{"id", "contents"}`` lines split over ``n_files`` files."""
    folder.mkdir(parents=True)
    docs = chunks.select(id="chunk_id", contents="text").sort("id")
    size = max(1, -(-docs.height // n_files))
    for i, start in enumerate(range(0, docs.height, size)):
        docs.slice(start, size).write_ndjson(folder / f"docs-{i:03d}.jsonl")


def build_index(docs: Path, index: Path, params: Bm25Params) -> None:
    args = ["-collection", "JsonCollection", "-input", str(docs), "-index", str(index),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(params.threads),
            "-stemmer", params.stemmer, "-quiet"]  # fmt: skip
    if params.java_heap_mb is not None:  # Lucene's indexing buffer (Anserini's default: 4,096 MiB) inside the heap
        args += ["-memoryBuffer", str(index_buffer_mb(params.java_heap_mb))]
    if not params.stopwords:
        args.append("-keepStopwords")
    anserini_class("io.anserini.index.IndexCollection", params.java_heap_mb).main(args)
    if not any(index.glob("segments_*")):
        raise RuntimeError(f"Anserini wrote no index to {index} (arguments {args})")


def index_buffer_mb(heap_mb: int) -> int:
    """Lucene's in-memory indexing buffer for a bounded heap: half of it, the rest left to the indexing threads."""
    return heap_mb // 2


def open_searcher(index: Path, params: Bm25Params):
    """Anserini's ``SimpleSearcher`` on this index (the Java object pyserini's ``LuceneSearcher`` wraps)."""
    return anserini_class("io.anserini.search.SimpleSearcher", params.java_heap_mb)(str(index))


def indexed_documents(index: Path, params: Bm25Params) -> int:
    searcher = open_searcher(index, params)
    try:
        return searcher.get_total_num_docs()
    finally:
        searcher.close()


def search(index: Path, queries: pl.DataFrame, params: Bm25Params, depth: int) -> pl.DataFrame:
    """Top ``depth`` hits per query: (query_id, chunk_id, score); chunks matching no query term are not hits."""
    searcher = open_searcher(index, params)
    try:
        from pyserini.analysis import get_lucene_analyzer  # after open_searcher: the JVM is prepared

        searcher.set_analyzer(
            get_lucene_analyzer(stemming=params.stemmer != "none", stemmer=params.stemmer, stopwords=params.stopwords)
        )
        searcher.set_bm25(float(params.k1), float(params.b))
        qids, texts = queries["query_id"].to_list(), queries["query_text"].to_list()
        rows = []
        for start in range(0, len(qids), SEARCH_SLICE):  # one slice's Java hits alive at a time
            part = qids[start : start + SEARCH_SLICE]
            found = searcher.batch_search(
                java_list(texts[start : start + SEARCH_SLICE]), java_list(part), int(depth), int(params.threads)
            )
            hits = {entry.getKey(): entry.getValue() for entry in found.entrySet().toArray()}
            rows += [(qid, hit.docid, hit.score) for qid in part for hit in hits.get(qid, [])]
            del found, hits
    finally:
        searcher.close()
    return pl.DataFrame(rows, schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64}, orient="row")
