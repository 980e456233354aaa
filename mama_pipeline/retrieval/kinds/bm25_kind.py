"""The ``bm25`` kind: Lucene BM25 through Anserini (pyserini), an index per corpus version and settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval.retriever_kinds import RetrieverKind
from mama_pipeline.retrieval.retriever_params import RetrieverSettings


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


class Bm25Retriever(RetrieverSettings):
    kind: Literal["bm25"]
    params: Bm25Params = Bm25Params()


def searcher(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval import bm25
    from mama_pipeline.retrieval.java import max_heap_mb
    from mama_pipeline.retrieval.registry import Searcher

    index, built = bm25.ensure_index(chunks, spec.params, corpus_version, env.work_dir / "bm25", env.log)
    # the first BM25 use in a process sets the JVM's heap: the bound in effect, which may be another retriever's
    return Searcher(
        lambda part: bm25.search(index, part, spec.params, depth),
        lambda: {
            "index": str(index),
            "index_built_now": built,
            "java_heap_mb_in_effect": max_heap_mb(),
            **spec.params.model_dump(),
        },  # fmt: skip
    )


KIND = RetrieverKind(Bm25Retriever, searcher)
