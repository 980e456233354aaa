"""Run one configured retriever over the corpus and queries: the rankings table plus metadata.

Heavy libraries (pyserini, torch, FAISS) load inside the runner of the kind that
needs them, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.retrieval.rankings import order_rankings
from mama_pipeline.retrieval.settings import RetrieverSettings
from mama_pipeline.store import Store


@dataclass
class RetrievalEnv:
    store: Store
    work_dir: Path  # indexes live here (data_dir/retrieval)
    resolve: Callable[[str], Path]  # a path from the configuration file
    load_rankings: Callable[[list[str]], pl.DataFrame]  # stored rankings of other retrievers (for fusion)
    log: Callable[[str], None] = print


@dataclass
class RetrieverOutput:
    rankings: pl.DataFrame
    metadata: dict[str, Any]


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
    """Top ``depth`` chunks per query for one retriever, in trec_eval order."""
    corpus_version = check_chunks(chunks)
    check_queries(queries)
    chunks = chunks.sort("chunk_id")
    queries = queries.sort("query_id")
    hits, meta = _RUNNERS[spec.kind](spec, chunks, queries, depth, corpus_version, env)
    rankings = order_rankings(hits, spec.name, depth)
    per_query = rankings.group_by("query_id").agg(n=pl.len())
    meta = {
        "retriever": spec.name,
        "kind": spec.kind,
        "top_k": depth,
        "corpus_version": corpus_version,
        "chunks": chunks.height,
        "queries": queries.height,
        "rows": rankings.height,
        "queries_without_hits": queries.height - per_query.height,
        "queries_with_fewer_than_top_k": int((per_query["n"] < min(depth, chunks.height)).sum()),
        **meta,
    }
    return RetrieverOutput(rankings, meta)


def _bm25(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval import bm25
    from mama_pipeline.retrieval.java import max_heap_mb

    index, built = bm25.ensure_index(chunks, spec.params, corpus_version, env.work_dir / "bm25", env.log)
    hits = bm25.search(index, queries, spec.params, depth)
    # the first BM25 use in a process sets the JVM's heap: the bound in effect, which may be another retriever's
    meta = {"index": str(index), "index_built_now": built, "java_heap_mb_in_effect": max_heap_mb()}
    return hits, {**meta, **spec.params.model_dump()}


def _embedding_search(encoder, chunks, queries, depth, env, label: str):
    from mama_pipeline.retrieval.embedding_cache import embed_with_cache
    from mama_pipeline.retrieval.exact_search import faiss_hits, sparse_hits

    docs, dstats = embed_with_cache(env.store, encoder, chunks["text"].to_list(), "document")
    qrys, qstats = embed_with_cache(env.store, encoder, queries["query_text"].to_list(), "query")
    search = sparse_hits if encoder.sparse else faiss_hits
    hits = search(docs.vectors, qrys.vectors, depth, queries["query_id"].to_list(), chunks["chunk_id"].to_numpy())
    meta = {
        "model": label,
        "dimension": encoder.dimension,
        "max_seq_length": encoder.max_seq_length,
        "chunks_truncated": dstats.truncated,
        "queries_truncated": qstats.truncated,
        "chunk_texts_embedded_now": dstats.encoded,
        "chunk_texts_from_cache": dstats.cached,
        "query_texts_embedded_now": qstats.encoded,
        "query_texts_from_cache": qstats.cached,
        "document_cache_key": dstats.model_keys[0],
        "query_cache_key": qstats.model_keys[0],
    }
    return hits, meta


def _dense(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval.encoders import load_dense

    encoder = load_dense(spec.params, env.resolve)
    return _embedding_search(encoder, chunks, queries, depth, env, encoder.source.identity)


def _sparse(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval.encoders import load_sparse

    encoder = load_sparse(spec.params, env.resolve)
    return _embedding_search(encoder, chunks, queries, depth, env, encoder.source.identity)


def _openai_embeddings(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval.openai_embeddings import OpenAIEmbeddingsEncoder

    encoder = OpenAIEmbeddingsEncoder(spec.params)
    hits, meta = _embedding_search(encoder, chunks, queries, depth, env, f"{spec.params.base_url}|{spec.params.model}")
    return hits, {**meta, "http_calls": encoder.calls}


def _imported(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval.imported import read_run, run_format

    path = env.resolve(spec.params.path)
    hits = read_run(path, spec.params.format, queries["query_id"].to_list(), chunks["chunk_id"].to_list())
    per_query = hits.group_by("query_id").agg(n=pl.len())
    beyond = int(per_query.select((pl.col("n") - depth).clip(lower_bound=0).sum()).item() or 0)
    return hits, {"file": str(path), "format": run_format(path, spec.params.format), "rows_read": hits.height,
                  "rows_beyond_top_k_cut": beyond}  # fmt: skip


def _rrf(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval.fusion import rrf_hits

    stored = _current_rankings(spec.name, spec.params.runs, chunks, queries, corpus_version, env)
    hits = rrf_hits(stored, spec.params.runs, spec.params.k, spec.params.depth)
    return hits, {"runs": ", ".join(spec.params.runs), "rrf_k": spec.params.k, "run_depth": spec.params.depth or "all"}


def _current_rankings(name, runs, chunks, queries, corpus_version, env) -> pl.DataFrame:
    """Stored rankings of ``runs``; an error when they name chunks or queries that are no longer there."""
    stored = env.load_rankings(runs)
    for column, table, frame in (("chunk_id", "corpus " + corpus_version, chunks), ("query_id", "queries", queries)):
        stale = stored.join(frame.select(column), on=column, how="anti")
        if stale.height:
            raise ValueError(
                f"retriever {name!r}: stored rankings of {sorted(stale['retriever'].unique().to_list())} name "
                f"{stale[column].n_unique()} {column}(s) missing from the {table}; re-materialise them first"
            )
    return stored


def _rerank(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval.rerank import record_failures, rerank_hits
    from mama_pipeline.retrieval.rerank_backends import load_scorer

    p = spec.params
    stored = _current_rankings(spec.name, [p.run], chunks, queries, corpus_version, env)
    if stored.filter(pl.col("retriever") == p.run).is_empty():
        raise ValueError(f"retriever {spec.name!r}: no stored rankings of {p.run!r}; materialise that partition first")
    candidates = (
        stored.filter((pl.col("retriever") == p.run) & (pl.col("rank") <= p.depth))
        .select("query_id", "chunk_id")
        .join(queries.select("query_id", "query_text"), on="query_id")
        .join(chunks.select("chunk_id", "text"), on="chunk_id")
        .sort("query_id", "chunk_id")
    )
    scorer = load_scorer(p.backend, env.resolve)
    hits, failed, stats = rerank_hits(candidates, scorer, env.store, env.log)
    record_failures(env.store, spec.name, corpus_version, failed)
    meta = {
        "run": p.run,
        "candidates_per_query": p.depth,
        "backend": p.backend.type,
        "model": scorer.label,
        "max_seq_length": scorer.max_length,
        "candidate_pairs": stats.candidates,
        "pairs": stats.pairs,
        "pairs_scored_now": stats.scored_now,
        "pairs_from_cache": stats.from_cache,
        "pairs_truncated": stats.truncated,
        "pairs_token_count_unknown": stats.token_counts_unknown,
        "queries_failed": len(failed),
        "failed_queries": ", ".join(list(failed)[:10]),
        "first_failure": next(iter(failed.values()), ""),
        "cache_key": scorer.model_key,
    }
    if hasattr(scorer, "calls"):
        meta["http_calls"] = scorer.calls
    return hits, meta


_RUNNERS = {
    "bm25": _bm25,
    "dense": _dense,
    "sparse": _sparse,
    "openai_embeddings": _openai_embeddings,
    "imported": _imported,
    "rrf": _rrf,
    "rerank": _rerank,
}
