"""The ``bm25`` kind: Lucene BM25 through Anserini (pyserini), an index per corpus version and settings."""

from __future__ import annotations

from typing import Literal

from mama_pipeline.retrieval._bm25 import Bm25Params
from mama_pipeline.retrieval._retriever_params import RetrieverKind, RetrieverSettings


class Bm25Retriever(RetrieverSettings):
    kind: Literal["bm25"]
    params: Bm25Params = Bm25Params()


def searcher(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval import _bm25 as bm25
    from mama_pipeline.retrieval._java import max_heap_mb
    from mama_pipeline.retrieval._registry import Searcher

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
