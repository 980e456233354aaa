"""Run one configured retriever over the corpus and queries: the rankings table plus metadata.

Heavy libraries (pyserini, torch, FAISS) load inside the runner of the kind that
needs them, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.common.slices import SLICE, row_slices
from mama_pipeline.retrieval.imported import HITS_SCHEMA
from mama_pipeline.retrieval.retriever_rankings import empty_rankings, order_rankings
from mama_pipeline.retrieval.settings import RetrieverSettings
from mama_pipeline.store import Store


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
    if spec.kind == "rrf":
        return list(spec.params.runs)
    if spec.kind == "rerank":
        return [spec.params.run]
    return []


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
    searcher = _SEARCHERS[spec.kind](spec, chunks, queries, depth, corpus_version, env)
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


def _bm25(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    from mama_pipeline.retrieval import bm25
    from mama_pipeline.retrieval.java import max_heap_mb

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


def _embedding_searcher(encoder, chunks, depth, env, label: str, also: Callable[[], dict] = dict) -> Searcher:
    """Documents embedded and indexed once; each slice's query texts embedded as it is searched (the query
    counts are summed over slices: a text repeated in two slices is counted in both, cached the second time)."""
    from mama_pipeline.retrieval.embedding_cache import embed_with_cache
    from mama_pipeline.retrieval.exact_search import ExactIndex

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


def _dense(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    from mama_pipeline.retrieval.encoders import load_dense

    encoder = load_dense(spec.params, env.resolve)
    return _embedding_searcher(encoder, chunks, depth, env, encoder.source.identity)


def _sparse(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    from mama_pipeline.retrieval.encoders import load_sparse

    encoder = load_sparse(spec.params, env.resolve)
    return _embedding_searcher(encoder, chunks, depth, env, encoder.source.identity)


def _openai_embeddings(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    from mama_pipeline.retrieval.openai_embeddings import OpenAIEmbeddingsEncoder

    encoder = OpenAIEmbeddingsEncoder(spec.params)
    label = f"{spec.params.base_url}|{spec.params.model}"
    return _embedding_searcher(encoder, chunks, depth, env, label, lambda: {"http_calls": encoder.calls})


def _imported(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    """The run file is read and validated once, against every query of the step; a slice takes its rows."""
    from mama_pipeline.retrieval.imported import read_run, run_format

    path = env.resolve(spec.params.path)
    hits = read_run(path, spec.params.format, queries["query_id"].to_list(), chunks["chunk_id"].to_list())
    per_query = hits.group_by("query_id").agg(n=pl.len())
    beyond = int(per_query.select((pl.col("n") - depth).clip(lower_bound=0).sum()).item() or 0)
    meta = {"file": str(path), "format": run_format(path, spec.params.format), "rows_read": hits.height,
            "rows_beyond_top_k_cut": beyond}  # fmt: skip
    return Searcher(lambda part: hits.filter(pl.col("query_id").is_in(part["query_id"].implode())), lambda: meta)


def _rrf(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    """A slice fuses the runs' stored rankings of its queries (a run with none of them adds nothing, as in a
    fusion of every query); a run with no stored rankings at all is refused once every slice is fused."""
    from mama_pipeline.retrieval.fusion import rrf_hits

    p = spec.params
    seen: set[str] = set()

    def search(part: pl.DataFrame) -> pl.DataFrame:
        stored = _current_rankings(spec.name, p.runs, chunks, part, corpus_version, env)
        seen.update(stored.get_column("retriever").unique().to_list())
        return rrf_hits(stored, p.runs, p.k, p.depth)

    def finish() -> dict[str, Any]:
        missing = [name for name in p.runs if name not in seen]
        if missing:
            raise ValueError(
                f"reciprocal rank fusion: no stored rankings for {missing}; materialise those partitions first"
            )
        return {"runs": ", ".join(p.runs), "rrf_k": p.k, "run_depth": p.depth or "all"}

    return Searcher(search, finish)


def _current_rankings(name, runs, chunks, queries, corpus_version, env) -> pl.DataFrame:
    """Stored rankings of ``runs`` for ``queries``; an error when they name chunks no longer in the corpus (a
    stored query missing from the current queries is the caller's check: see
    :meth:`~mama_pipeline.retrieval.stored_rankings.StoredRankings.check_current`)."""
    stored = env.load_rankings(runs, queries.get_column("query_id").to_list())
    stale = stored.join(chunks.select("chunk_id"), on="chunk_id", how="anti")
    if stale.height:
        raise ValueError(
            f"retriever {name!r}: stored rankings of {sorted(stale['retriever'].unique().to_list())} name "
            f"{stale['chunk_id'].n_unique()} chunk_id(s) missing from the corpus {corpus_version}; "
            "re-materialise them first"
        )
    return stored


def _rerank(spec, chunks, queries, depth, corpus_version, env) -> Searcher:
    """A slice reranks its queries' candidates from the stored base run; the failures are recorded and a base run
    with no stored rankings at all is refused once every slice is reranked. The pair counts are summed over
    slices."""
    from mama_pipeline.retrieval.rerank import RerankStats, record_failures, rerank_hits
    from mama_pipeline.retrieval.rerank_backends import load_scorer

    p = spec.params
    scorer = load_scorer(p.backend, env.resolve)
    texts = chunks.select("chunk_id", "text")
    total, failed, base_rows = RerankStats(), {}, [0]

    def search(part: pl.DataFrame) -> pl.DataFrame:
        stored = _current_rankings(spec.name, [p.run], chunks, part, corpus_version, env)
        base = stored.filter(pl.col("retriever") == p.run)
        base_rows[0] += base.height
        candidates = (
            base.filter(pl.col("rank") <= p.depth)
            .select("query_id", "chunk_id")
            .join(part.select("query_id", "query_text"), on="query_id")
            .join(texts, on="chunk_id")
            .sort("query_id", "chunk_id")
        )
        if candidates.is_empty():
            return pl.DataFrame(schema=HITS_SCHEMA)
        hits, slice_failed, stats = rerank_hits(candidates, scorer, env.store, env.log)
        failed.update(slice_failed)
        for name, value in vars(stats).items():
            setattr(total, name, getattr(total, name) + value)
        return hits

    def finish() -> dict[str, Any]:
        if not base_rows[0]:
            raise ValueError(
                f"retriever {spec.name!r}: no stored rankings of {p.run!r}; materialise that partition first"
            )
        record_failures(env.store, spec.name, corpus_version, failed)
        meta = {
            "run": p.run,
            "candidates_per_query": p.depth,
            "backend": p.backend.type,
            "model": scorer.label,
            "max_seq_length": scorer.max_length,
            "candidate_pairs": total.candidates,
            "pairs": total.pairs,
            "pairs_scored_now": total.scored_now,
            "pairs_from_cache": total.from_cache,
            "pairs_truncated": total.truncated,
            "pairs_token_count_unknown": total.token_counts_unknown,
            "queries_failed": len(failed),
            "failed_queries": ", ".join(list(failed)[:10]),
            "first_failure": next(iter(failed.values()), ""),
            "cache_key": scorer.model_key,
        }
        if hasattr(scorer, "calls"):
            meta["http_calls"] = scorer.calls
        return meta

    return Searcher(search, finish)


_SEARCHERS = {
    "bm25": _bm25,
    "dense": _dense,
    "sparse": _sparse,
    "openai_embeddings": _openai_embeddings,
    "imported": _imported,
    "rrf": _rrf,
    "rerank": _rerank,
}
