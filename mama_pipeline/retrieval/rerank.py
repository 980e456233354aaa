"""Two-stage retrieval: rerank the top candidates of another stored ranking.

Scores are cached in DuckDB per (reranker setup, query text, chunk text), so a
re-run, or a new corpus version that keeps most chunk texts, only scores pairs
never seen. A query whose pairs a backend could not score (endpoint errors,
timeouts, malformed answers after the retries) gets no reranked ranking at all,
never one from default scores: it is listed in ``rerank_failures`` and asked
again on the next run.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import polars as pl

from mama_pipeline.retrieval.embedding_cache import text_sha256
from mama_pipeline.store import Store

CACHE_TABLE = "rerank_cache"
FAILURE_TABLE = "rerank_failures"
PAIR_SCHEMA = {"query_sha256": pl.String, "text_sha256": pl.String, "score": pl.Float64, "n_tokens": pl.Int32}


@dataclass
class PairGroup:
    """One query text and the chunk texts to score against it."""

    query: str
    texts: list[str]


@dataclass
class GroupScores:
    """A group's scores in text order (and token counts, -1 when unknown), or why it failed."""

    scores: np.ndarray | None = None
    n_tokens: np.ndarray | None = None
    error: str | None = None


class Scorer(Protocol):
    model_key: str  # everything that changes a score: backend, model identity, max length, request format
    label: str  # the model, for metadata
    max_length: int | None  # tokens of a query + chunk pair the model reads; None: unknown

    def score(self, groups: list[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        """Score every group; ``done(i, result)`` as each finishes (a failed group carries ``error``)."""


@dataclass
class RerankStats:
    candidates: int = 0
    pairs: int = 0  # distinct (query text, chunk text) pairs
    from_cache: int = 0
    scored_now: int = 0
    truncated: int = 0  # pairs longer than the scorer's max_length (their tail was not read)
    token_counts_unknown: int = 0


def rerank_hits(
    candidates: pl.DataFrame,
    scorer: Scorer,
    store: Store,
    log: Callable[[str], None] = print,
    flush_every: int = 20_000,
) -> tuple[pl.DataFrame, dict[str, str], RerankStats]:
    """Reranked hits (query_id, chunk_id, score) of ``candidates`` (query_id, chunk_id, query_text, text).

    ``text`` is the chunk's text and ``query_text`` the query's (one per id); each distinct text is hashed and
    held once. Returns the hits of every query that was fully scored, the failed queries (query_id -> error)
    and the counts.
    """
    store.ensure_tables(CACHE_TABLE)
    queries = _hashed(candidates.select("query_id", "query_text").unique("query_id"), "query_text", "query_sha256")
    chunks = _hashed(candidates.select("chunk_id", "text").unique("chunk_id"), "text", "text_sha256").with_row_index("t")
    pairs = (candidates.select("query_id", "chunk_id")
             .join(queries, on="query_id", maintain_order="left")
             .join(chunks.drop("text"), on="chunk_id", maintain_order="left"))
    unique = pairs.unique(["query_sha256", "text_sha256"], maintain_order=True)
    stats = RerankStats(candidates=candidates.height, pairs=unique.height)
    cached = _lookup(store, scorer.model_key, unique.select("query_sha256", "text_sha256"))
    missing = unique.join(cached.select("query_sha256", "text_sha256"), on=["query_sha256", "text_sha256"], how="anti")
    stats.from_cache = unique.height - missing.height
    grouped = missing.group_by("query_sha256", maintain_order=True).agg(
        pl.col("query_text").first(), pl.col("text_sha256"), pl.col("t")
    )
    pool = chunks["text"].to_list()  # groups share these strings rather than copying one per pair
    groups = [PairGroup(q, [pool[i] for i in rows]) for q, rows in zip(grouped["query_text"].to_list(),
                                                                        grouped["t"].to_list())]
    group_q = grouped["query_sha256"].to_list()
    group_t = grouped["text_sha256"].to_list()
    failed_sha: dict[str, str] = {}
    new_rows: list[pl.DataFrame] = []
    pending = _Pending()
    step = max(1, len(groups) // 10)
    finished = 0
    # cache writes run in one background thread, in order, so an endpoint's event loop is never blocked by them
    writer = ThreadPoolExecutor(max_workers=1)
    writes = []

    def flush() -> None:
        if pending.rows:
            rows = pending.frame()
            new_rows.append(rows)
            writes.append(writer.submit(_insert, store, scorer.model_key, rows))

    def done(i: int, result: GroupScores) -> None:
        nonlocal finished
        finished += 1
        if result.error is not None:
            failed_sha[group_q[i]] = result.error
        else:
            pending.add(group_q[i], group_t[i], result.scores, result.n_tokens)
            if pending.rows >= flush_every:
                flush()
        if finished % step == 0 or finished == len(groups):
            log(f"reranking: {finished}/{len(groups)} query texts scored ({len(failed_sha)} failed)")

    try:
        if groups:
            scorer.score(groups, done)
    finally:
        flush()
        writer.shutdown(wait=True)
    for write in writes:
        write.result()  # a failed cache write fails the run
    stats.scored_now = sum(r.height for r in new_rows)
    scored = pl.concat([cached, *new_rows]) if new_rows else cached
    tokens = scored["n_tokens"].fill_null(-1)
    stats.token_counts_unknown = int((tokens < 0).sum())
    if scorer.max_length is not None:
        stats.truncated = int((tokens > scorer.max_length).sum())
    failed = {q: failed_sha[s] for q, s in pairs.select("query_id", "query_sha256").unique().iter_rows() if s in failed_sha}
    hits = (
        pairs.filter(~pl.col("query_id").is_in(list(failed)))
        .join(scored, on=["query_sha256", "text_sha256"], how="left")
    )
    if hits["score"].null_count():
        raise RuntimeError(f"rerank cache {scorer.model_key!r}: {hits['score'].null_count()} scores missing after scoring")
    return hits.select("query_id", "chunk_id", "score"), dict(sorted(failed.items())), stats


def record_failures(store: Store, retriever: str, corpus_version: str, failed: dict[str, str]) -> None:
    """Replace this reranker's failure list for this corpus version with the latest run's."""
    store.ensure_tables(FAILURE_TABLE)
    frame = pl.DataFrame(
        {"retriever": retriever, "corpus_version": corpus_version, "query_id": list(failed), "error": list(failed.values())},
        schema={"retriever": pl.String, "corpus_version": pl.String, "query_id": pl.String, "error": pl.String},
    )
    with store.connect(write=True) as con:
        con.execute(f"DELETE FROM {FAILURE_TABLE} WHERE retriever = ? AND corpus_version = ?", [retriever, corpus_version])
        con.register("_incoming", frame.to_arrow())
        con.execute(f"INSERT INTO {FAILURE_TABLE} BY NAME SELECT * FROM _incoming")
        con.unregister("_incoming")


class _Pending:
    """Scored pairs not yet written, kept as plain lists (one table per flush, not per query)."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.rows = 0
        self._q: list[str] = []
        self._t: list[str] = []
        self._scores: list[np.ndarray] = []
        self._tokens: list[np.ndarray] = []

    def add(self, q: str, texts: list[str], scores: np.ndarray, tokens: np.ndarray | None) -> None:
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (len(texts),) or not np.isfinite(scores).all():
            raise RuntimeError(f"reranker returned {scores.shape} scores (finite: {np.isfinite(scores).all()}) "
                               f"for {len(texts)} texts")
        self._q.extend([q] * len(texts))
        self._t.extend(texts)
        self._scores.append(scores)
        self._tokens.append(np.full(len(texts), -1, dtype=np.int32) if tokens is None else np.asarray(tokens, np.int32))
        self.rows += len(texts)

    def frame(self) -> pl.DataFrame:
        out = pl.DataFrame(
            {"query_sha256": self._q, "text_sha256": self._t, "score": np.concatenate(self._scores),
             "n_tokens": np.concatenate(self._tokens)},
            schema=PAIR_SCHEMA,
        ).with_columns(n_tokens=pl.when(pl.col("n_tokens") >= 0).then("n_tokens"))
        self._clear()
        return out


def _hashed(frame: pl.DataFrame, column: str, name: str) -> pl.DataFrame:
    """``frame`` with the SHA-256 of each value of ``column`` (its rows are distinct ids)."""
    return frame.with_columns(pl.Series(name, [text_sha256(v) for v in frame[column].to_list()], dtype=pl.String))


def _insert(store: Store, key: str, rows: pl.DataFrame) -> None:
    """Add the pairs the cache does not hold yet (an anti-join: the table has no index to keep up)."""
    frame = rows.with_columns(model_key=pl.lit(key))
    with store.connect(write=True) as con:
        con.register("_incoming", frame.to_arrow())
        con.execute(f"""INSERT INTO {CACHE_TABLE} BY NAME
                        SELECT i.* FROM _incoming i
                        ANTI JOIN {CACHE_TABLE} c USING (model_key, query_sha256, text_sha256)""")
        con.unregister("_incoming")


def _lookup(store: Store, key: str, wanted: pl.DataFrame) -> pl.DataFrame:
    with store.connect() as con:
        con.register("_wanted", wanted.to_arrow())
        found = con.execute(
            f"""SELECT c.query_sha256, c.text_sha256, c.score, c.n_tokens
                FROM {CACHE_TABLE} c JOIN _wanted w USING (query_sha256, text_sha256) WHERE c.model_key = ?""",
            [key],
        ).pl()
        con.unregister("_wanted")
    return found.select([pl.col(c).cast(t) for c, t in PAIR_SCHEMA.items()])
