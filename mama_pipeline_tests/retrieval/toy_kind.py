"""A retriever kind defined outside the package, as a newcomer writes one: ``shared_words`` ranks a chunk by
the number of distinct words it shares with the query (ties: trec_eval's order). One file, registered through
:func:`mama_pipeline.retrieval._retriever_kinds.register`."""

from __future__ import annotations

import re
from typing import Literal

import polars as pl
from pydantic import Field

from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval._retriever_params import RetrieverKind, RetrieverSettings


class SharedWordsParams(Section):
    min_shared: int = Field(1, ge=1)  # a chunk sharing fewer words is not ranked


class SharedWordsRetriever(RetrieverSettings):
    kind: Literal["shared_words"]
    params: SharedWordsParams = SharedWordsParams()


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def searcher(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval._registry import Searcher

    chunk_words = [(c, words(t)) for c, t in chunks.select("chunk_id", "text").iter_rows()]

    def search(part: pl.DataFrame) -> pl.DataFrame:
        rows = [
            (q, c, float(n))
            for q, text in part.select("query_id", "query_text").iter_rows()
            for c, ws in chunk_words
            if (n := len(words(text) & ws)) >= spec.params.min_shared
        ]
        return pl.DataFrame(
            rows, schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Float64}, orient="row"
        )

    return Searcher(search, lambda: {"min_shared": spec.params.min_shared})


KIND = RetrieverKind(SharedWordsRetriever, searcher)
