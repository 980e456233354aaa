"""Run one configured retriever over the corpus and queries: the rankings table plus metadata.

Each kind's searcher is in its module in ``retrieval/_kinds/`` (found through
:mod:`mama_pipeline.retrieval._retriever_kinds`); heavy libraries (pyserini, torch,
FAISS) load inside it, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from mama_pipeline.common.slices import SLICE, row_slices
from mama_pipeline.retrieval._retriever_kinds import kind_of
from mama_pipeline.retrieval._retriever_rankings import empty_rankings, order_rankings
from mama_pipeline.store import Store

if TYPE_CHECKING:
    from mama_pipeline.retrieval._retriever_params import RetrieverSettings
    from mama_pipeline.settings import PipelineSettings


@dataclass
class RetrievalEnv:
    store: Store
    work_dir: Path  # indexes live here (data_dir/retrieval)
    resolve: Callable[[str], Path]  # a path from the configuration file
    # stored rankings of other retrievers (for fusion and reranking): (retrievers, query ids) -> their rows
    load_rankings: Callable[[list[str], list[str]], pl.DataFrame]
    log: Callable[[str], None] = print


@dataclass
class RetrieverOutput:
    rankings: pl.DataFrame
    metadata: dict[str, Any]


@dataclass
class Searcher:
    """A retriever ready to search: the hits (query_id, chunk_id, score) of some queries at a time, and what it
    records and reports once every query is searched (``finish``: its counts grow as it searches)."""

    search: Callable[[pl.DataFrame], pl.DataFrame]
    finish: Callable[[], dict[str, Any]]


def needs(spec: RetrieverSettings) -> list[str]:
    """The retrievers whose rankings ``spec`` reads: a fusion's runs, a reranker's base run."""
    return spec.runs_read()


def retrieval_env(
    s: PipelineSettings,
    store: Store,
    log: Callable[[str], None] = print,
    load_rankings: Callable[[list[str], list[str]], pl.DataFrame] | None = None,
) -> RetrievalEnv:
    """The environment every caller runs retrievers in: indexes under ``<data_dir>/retrieval``, paths resolved
    against the configuration file, other retrievers' rankings from the store's rankings table unless
    ``load_rankings`` gives them."""
    from mama_pipeline.retrieval._stored_rankings import RANKINGS_TABLE

    work_dir = s.data_path / "retrieval"
    work_dir.mkdir(parents=True, exist_ok=True)
    if load_rankings is None:
        load_rankings = lambda names, ids: store.read_table(RANKINGS_TABLE, partitions=names, where={"query_id": ids})  # noqa: E731
    return RetrievalEnv(store=store, work_dir=work_dir, resolve=s.resolve, load_rankings=load_rankings, log=log)


def rankings_in(rankings: pl.DataFrame) -> Callable[[list[str], list[str]], pl.DataFrame]:
    """``load_rankings`` over rankings held in memory: the rows of some retrievers and queries."""
    return lambda names, query_ids: rankings.filter(
        pl.col("retriever").is_in(names) & pl.col("query_id").is_in(query_ids)
    )


def check_chunks(chunks: pl.DataFrame) -> str:
    """Validate the chunks table; returns its corpus version."""
    _require(chunks, "chunks", ["chunk_id", "text", "corpus_version"])
    _unique_non_null(chunks, "chunks", "chunk_id", "text")
    versions = chunks["corpus_version"].drop_nulls().unique().sort().to_list()
    if len(versions) != 1 or chunks["corpus_version"].null_count():
        nulls = chunks["corpus_version"].null_count()
        raise ValueError(f"chunks table: expected one corpus_version, found {versions} ({nulls} null)")
    return str(versions[0])


def check_queries(queries: pl.DataFrame) -> None:
    _require(queries, "queries", ["query_id", "query_text"])
    _unique_non_null(queries, "queries", "query_id", "query_text")


def _require(frame: pl.DataFrame, table: str, columns: list[str]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{table} table: missing column(s) {missing}")


def _unique_non_null(frame: pl.DataFrame, table: str, id_col: str, text_col: str) -> None:
    dup = frame.filter(pl.col(id_col).is_duplicated())
    if dup.height:
        raise ValueError(f"{table} table: {id_col} {dup[id_col][0]!r} appears {dup.height} times")
    bad = frame.filter(pl.col(id_col).is_null() | pl.col(text_col).is_null())
    if bad.height:
        raise ValueError(f"{table} table: record {bad[id_col][0]!r} has no {id_col} or {text_col}")


def run_retriever(
    spec: RetrieverSettings, chunks: pl.DataFrame, queries: pl.DataFrame, depth: int, env: RetrievalEnv
) -> RetrieverOutput:
    """Top ``depth`` chunks per query for one retriever, in trec_eval order (the slices of
    :func:`ranked_slices`, concatenated)."""
    ranked = ranked_slices(spec, chunks, queries, depth, env)
    rankings = pl.concat([empty_rankings(), *ranked.slices])
    return RetrieverOutput(rankings, ranked.metadata())


@dataclass
class RankedSlices:
    """One retriever's rankings a slice of queries at a time (in query_id order: concatenated, the whole
    table's order), and its metadata once every slice has been taken."""

    slices: Iterator[pl.DataFrame]
    metadata: Callable[[], dict[str, Any]]


def ranked_slices(
    spec: RetrieverSettings,
    chunks: pl.DataFrame,
    queries: pl.DataFrame,
    depth: int,
    env: RetrievalEnv,
    size: int = SLICE,
) -> RankedSlices:
    """Rank ``queries`` ``size`` at a time: the searcher (index, document vectors) is prepared once, and only a
    slice's hits and rankings are held."""
    corpus_version = check_chunks(chunks)
    check_queries(queries)
    chunks = chunks.sort("chunk_id")
    queries = queries.sort("query_id")
    searcher = kind_of(spec).searcher(spec, chunks, queries, depth, corpus_version, env)
    counts = {"rows": 0, "queries_without_hits": 0, "queries_with_fewer_than_top_k": 0}

    def slices() -> Iterator[pl.DataFrame]:
        for mine in row_slices(queries, size):
            rankings = order_rankings(searcher.search(mine), spec.name, depth)
            per_query = rankings.group_by("query_id").agg(n=pl.len())
            counts["rows"] += rankings.height
            counts["queries_without_hits"] += mine.height - per_query.height
            counts["queries_with_fewer_than_top_k"] += int((per_query["n"] < min(depth, chunks.height)).sum())
            yield rankings

    def metadata() -> dict[str, Any]:
        return {
            "retriever": spec.name,
            "kind": spec.kind,
            "top_k": depth,
            "corpus_version": corpus_version,
            "chunks": chunks.height,
            "queries": queries.height,
            **counts,
            **searcher.finish(),
        }

    return RankedSlices(slices(), metadata)


def embedding_searcher(encoder, chunks, depth, env, label: str, also: Callable[[], dict] = dict) -> Searcher:
    """Documents embedded and indexed once; each slice's query texts embedded as it is searched (the query
    counts are summed over slices: a text repeated in two slices is counted in both, cached the second time)."""
    from mama_pipeline.retrieval._embedding_cache import embed_with_cache
    from mama_pipeline.retrieval._exact_search import ExactIndex

    docs, dstats = embed_with_cache(env.store, encoder, chunks["text"].to_list(), "document")
    index = ExactIndex(docs.vectors, chunks["chunk_id"].to_numpy(), encoder.sparse)
    del docs
    q = {"embedded": 0, "cached": 0, "truncated": 0}
    query_key = encoder.model_key("query")

    def search(part: pl.DataFrame) -> pl.DataFrame:
        qrys, qstats = embed_with_cache(env.store, encoder, part["query_text"].to_list(), "query")
        q["embedded"] += qstats.encoded
        q["cached"] += qstats.cached
        q["truncated"] += qstats.truncated
        return index.hits(qrys.vectors, depth, part["query_id"].to_list())

    def metadata() -> dict[str, Any]:
        return {
            "model": label,
            "dimension": encoder.dimension,
            "max_seq_length": encoder.max_seq_length,
            "chunks_truncated": dstats.truncated,
            "queries_truncated": q["truncated"],
            "chunk_texts_embedded_now": dstats.encoded,
            "chunk_texts_from_cache": dstats.cached,
            "query_texts_embedded_now": q["embedded"],
            "query_texts_from_cache": q["cached"],
            "document_cache_key": dstats.model_keys[0],
            "query_cache_key": query_key,
            **also(),
        }

    return Searcher(search, metadata)


def current_rankings(name, runs, chunks, queries, corpus_version, env) -> pl.DataFrame:
    """Stored rankings of ``runs`` for ``queries``; an error when they name chunks no longer in the corpus (a
    stored query missing from the current queries is the caller's check: see
    :meth:`~mama_pipeline.retrieval._stored_rankings.StoredRankings.check_current`)."""
    stored = env.load_rankings(runs, queries.get_column("query_id").to_list())
    stale = stored.join(chunks.select("chunk_id"), on="chunk_id", how="anti")
    if stale.height:
        raise ValueError(
            f"retriever {name!r}: stored rankings of {sorted(stale['retriever'].unique().to_list())} name "
            f"{stale['chunk_id'].n_unique()} chunk_id(s) missing from the corpus {corpus_version}; "
            "re-materialise them first"
        )
    return stored
