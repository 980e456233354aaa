"""The ``imported`` kind: a run made elsewhere (TREC run file or parquet), for the queries it was made for."""

from __future__ import annotations

from typing import Literal

from mama_pipeline.common.settings_base import Section
from mama_pipeline.retrieval._retriever_params import RetrieverKind, RetrieverSettings


class ImportedParams(Section):
    path: str  # TREC run file, or parquet with query_id, chunk_id, score (rank optional)
    format: Literal["trec", "parquet"] | None = None  # None: from the file suffix


class ImportedRetriever(RetrieverSettings):
    kind: Literal["imported"]
    params: ImportedParams

    def input_path(self) -> str | None:
        return self.params.path


def searcher(spec, chunks, queries, depth, corpus_version, env):
    """The run file is read and validated once, against every query of the step; a slice takes its rows."""
    import polars as pl

    from mama_pipeline.retrieval._imported import read_run, run_format
    from mama_pipeline.retrieval._registry import Searcher

    path = env.resolve(spec.params.path)
    hits = read_run(path, spec.params.format, queries["query_id"].to_list(), chunks["chunk_id"].to_list())
    per_query = hits.group_by("query_id").agg(n=pl.len())
    beyond = int(per_query.select((pl.col("n") - depth).clip(lower_bound=0).sum()).item() or 0)
    meta = {"file": str(path), "format": run_format(path, spec.params.format), "rows_read": hits.height,
            "rows_beyond_top_k_cut": beyond}  # fmt: skip
    return Searcher(lambda part: hits.filter(pl.col("query_id").is_in(part["query_id"].implode())), lambda: meta)


KIND = RetrieverKind(ImportedRetriever, searcher, ranks_free_text=False)
