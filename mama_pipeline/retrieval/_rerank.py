"""Two-stage retrieval: rerank the top candidates of another stored ranking.

Scores are cached in DuckDB per (reranker setup, query text, chunk text), so a
re-run, or a new corpus version that keeps most chunk texts, only scores pairs
never seen. A query whose pairs a backend could not score (endpoint errors,
timeouts, malformed answers after the retries) gets no reranked ranking at all,
never one from default scores: it is listed in ``rerank_failures`` and asked
again on the next run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import polars as pl

from mama_pipeline.common.thread_priority import background_thread
from mama_pipeline.retrieval._embedding_cache import text_sha256
from mama_pipeline.store import Store
from mama_pipeline.store.table_schema import table_schema

CACHE_TABLE = "rerank_cache"
FAILURE_TABLE = "rerank_failures"
PAIR_SCHEMA = table_schema("rerank_cache", without=("model_key",))


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

    def score(self, groups: Iterable[PairGroup], done: Callable[[int, GroupScores], None]) -> None:
        """Score every group, taking them from ``groups`` as it needs them (they are prepared on demand);
        ``done(i, result)`` as the i-th finishes (a failed group carries ``error``)."""


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
    batch_queries: int = 32,
) -> tuple[pl.DataFrame, dict[str, str], RerankStats]:
    """Reranked hits (query_id, chunk_id, score) of ``candidates`` (query_id, chunk_id, query_text, text), in
    ``candidates``' order.

    ``text`` is the chunk's text and ``query_text`` the query's (one per id). The cache is read once for the
    query texts; the pairs are then prepared ``batch_queries`` queries at a time as the scorer asks for them,
    so the first requests go out at once and the rest is hashed and grouped while they are in flight. Returns
    the hits of every query that was fully scored, the failed queries (query_id -> error) and the counts.
    """
    store.ensure_tables(CACHE_TABLE)
    queries = _hashed(
        candidates.select("query_id", "query_text").unique("query_id", maintain_order=True),
        "query_text",
        "query_sha256",
    )
    run = _Run(candidates, queries, _lookup(store, scorer.model_key, queries["query_sha256"].unique()), batch_queries)
    failed_sha: dict[str, str] = {}
    pending = _Pending()
    scored_now = 0
    step = max(1, run.query_texts // 10)
    finished = 0
    # cache writes run in one background thread, in order, so an endpoint's event loop is never blocked by them;
    # a flush waits for the previous write to end (rows gather meanwhile), so a slow disk means fewer, larger writes
    writer = ThreadPoolExecutor(max_workers=1, initializer=background_thread)
    writes = []

    def flush() -> None:
        nonlocal scored_now
        if pending.rows:
            scored_now += pending.rows
            writes.append(writer.submit(_insert, store, scorer.model_key, pending.frame()))

    def done(i: int, result: GroupScores) -> None:
        nonlocal finished
        finished += 1
        q, texts, slots = run.groups[i]
        if result.error is not None:
            failed_sha[q] = result.error
        else:
            pending.add(q, texts, result.scores, result.n_tokens)
            run.fill(slots, result.scores, result.n_tokens)
            # once every group is handed out, write whenever the writer is free: the last write stays small
            if (pending.rows >= flush_every or run.all_prepared) and (not writes or writes[-1].done()):
                flush()
        if finished % step == 0:
            log(f"reranking: {finished} query texts scored ({len(failed_sha)} failed)")

    try:
        try:
            groups = run.prepared()
            first = next(groups, None)
            if first is not None:
                scorer.score(itertools.chain([first], groups), done)
        finally:
            flush()
        hits, stats = run.hits(failed_sha, scorer.max_length)  # while the last write runs
    finally:
        writer.shutdown(wait=True)
    for write in writes:
        write.result()  # a failed cache write fails the run
    stats.scored_now = scored_now
    failed = {q: failed_sha[s] for q, s in queries.select("query_id", "query_sha256").iter_rows() if s in failed_sha}
    log(
        f"reranking: {finished} query texts scored ({len(failed)} queries failed), {stats.from_cache} of "
        f"{stats.pairs} pairs from the cache"
    )
    return hits, dict(sorted(failed.items())), stats


class _Run:
    """The distinct (query text, chunk text) pairs of one call, numbered as they are prepared, with their scores.

    Each candidate row points at its pair's slot; a pair found in the cache gets its score when prepared, a
    scored one when its group is done; the hits are then one gather, with no join on the long hash strings.
    """

    def __init__(self, candidates: pl.DataFrame, queries: pl.DataFrame, cached: pl.DataFrame, batch_queries: int):
        self.queries = queries
        self.query_texts = queries["query_sha256"].n_unique()
        self._batch = max(1, batch_queries)
        self._rows = (
            candidates.with_row_index("_row")
            .drop("query_text")
            .join(queries.with_row_index("_q"), on="query_id", maintain_order="left")
            .sort("_q", maintain_order=True)
        )  # each query's candidates together, in their order
        self._per_query = self._rows.group_by("_q", maintain_order=True).len()["len"].to_list()
        self._candidates = candidates.select("query_id", "chunk_id")
        n = candidates.height
        self.slot_of_row = np.full(n, -1, dtype=np.int64)
        self.scores = np.full(n, np.nan)
        self.tokens = np.full(n, -1, dtype=np.int32)
        self.slots = 0
        self.from_cache = 0
        self.groups: list[tuple[str, list[str], np.ndarray]] = []  # query sha, text shas, slots (done's index)
        self._cached: dict[str, dict[str, int]] = {}  # query sha -> text sha -> row of ``cached``
        if cached.height:
            by_query = cached.with_row_index("_i").group_by("query_sha256").agg("text_sha256", "_i")
            self._cached = {q: dict(zip(t, i)) for q, t, i in by_query.iter_rows()}
        self._cached_score = cached["score"].to_numpy()
        self._cached_tokens = cached["n_tokens"].fill_null(-1).to_numpy()
        self._slot_of: dict[str, dict[str, int]] = {}  # query sha -> text sha -> slot
        self._sha: dict[str, str] = {}  # chunk id -> text sha
        self._text: dict[str, str] = {}  # text sha -> text: each text hashed and held once
        self.all_prepared = False

    def prepared(self) -> Iterator[PairGroup]:
        """The groups of pairs to score, one per query text (per query id when texts repeat), made as asked for."""
        start = 0
        for b in range(0, len(self._per_query), self._batch):
            sizes = self._per_query[b : b + self._batch]
            frame = self._rows.slice(start, sum(sizes))
            start += sum(sizes)
            ids = frame["chunk_id"].to_list()
            new = [c for c in dict.fromkeys(ids) if c not in self._sha]
            first_row = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1))) if new else {}
            for c, text in zip(new, frame["text"].gather([first_row[c] for c in new]).to_list()):
                t = self._sha[c] = text_sha256(text)
                self._text.setdefault(t, text)
            rows = frame["_row"].to_numpy()
            at = 0
            for q, qtext, k in zip(
                frame["query_sha256"].gather(np.cumsum([0, *sizes[:-1]])).to_list(),
                frame["query_text"].gather(np.cumsum([0, *sizes[:-1]])).to_list(),
                sizes,
            ):
                group = self._query(q, ids[at : at + k], rows[at : at + k])
                at += k
                if group is not None:
                    yield PairGroup(qtext, group)
        self.all_prepared = True

    def _query(self, q: str, ids: list[str], rows: np.ndarray) -> list[str] | None:
        """Slot the query's pairs; the texts still to score (None: none), recorded in ``groups``."""
        shas = [self._sha[c] for c in ids]
        slot_of = self._slot_of.setdefault(q, {})
        new = [t for t in dict.fromkeys(shas) if t not in slot_of]  # text shas of pairs not slotted before
        first = self.slots
        self.slots += len(new)
        slot_of.update(zip(new, range(first, self.slots)))
        self.slot_of_row[rows] = [slot_of[t] for t in shas]
        cached = self._cached.get(q)
        if cached:
            found = np.asarray([cached.get(t, -1) for t in new], dtype=np.int64)  # row of ``cached``, or -1
            hit = found >= 0
            self.scores[first + np.flatnonzero(hit)] = self._cached_score[found[hit]]
            self.tokens[first + np.flatnonzero(hit)] = self._cached_tokens[found[hit]]
            self.from_cache += int(hit.sum())
            new = [t for t, h in zip(new, hit) if not h]
            slots = first + np.flatnonzero(~hit)
        else:
            slots = np.arange(first, self.slots)
        if not new:
            return None
        self.groups.append((q, new, slots))
        return [self._text[t] for t in new]

    def fill(self, slots: np.ndarray, scores: np.ndarray, tokens: np.ndarray | None) -> None:
        self.scores[slots] = scores
        if tokens is not None:
            self.tokens[slots] = tokens

    def hits(self, failed_sha: dict[str, str], max_length: int | None) -> tuple[pl.DataFrame, RerankStats]:
        if self._rows.height and (self.slot_of_row < 0).any():
            raise RuntimeError("rerank: candidate rows were left unprepared")  # the scorer stopped asking early
        stats = RerankStats(candidates=self.slot_of_row.size, pairs=self.slots, from_cache=self.from_cache)
        tokens = self.tokens[: self.slots]
        done = np.isfinite(self.scores[: self.slots])
        stats.token_counts_unknown = int(((tokens < 0) & done).sum())
        if max_length is not None:
            stats.truncated = int((tokens > max_length).sum())
        ok = (
            ~self._candidates["query_id"]
            .is_in(self.queries.filter(pl.col("query_sha256").is_in(list(failed_sha)))["query_id"].implode())
            .to_numpy()
        )
        scores = self.scores[self.slot_of_row[ok]]
        if np.isnan(scores).any():
            raise RuntimeError(f"rerank: {int(np.isnan(scores).sum())} scores missing after scoring")
        return self._candidates.filter(pl.Series(ok)).with_columns(score=pl.Series(scores, dtype=pl.Float64)), stats


def record_failures(store: Store, retriever: str, corpus_version: str, failed: dict[str, str]) -> None:
    """Replace this reranker's failure list for this corpus version with the latest run's."""
    store.ensure_tables(FAILURE_TABLE)
    frame = pl.DataFrame(
        {
            "retriever": retriever,
            "corpus_version": corpus_version,
            "query_id": list(failed),
            "error": list(failed.values()),
        },
        schema={"retriever": pl.String, "corpus_version": pl.String, "query_id": pl.String, "error": pl.String},
    )
    with store.connect(write=True) as con:
        con.execute(
            f"DELETE FROM {FAILURE_TABLE} WHERE retriever = ? AND corpus_version = ?", [retriever, corpus_version]
        )
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
            raise RuntimeError(
                f"reranker returned {scores.shape} scores (finite: {np.isfinite(scores).all()}) for {len(texts)} texts"
            )
        self._q.extend([q] * len(texts))
        self._t.extend(texts)
        self._scores.append(scores)
        self._tokens.append(np.full(len(texts), -1, dtype=np.int32) if tokens is None else np.asarray(tokens, np.int32))
        self.rows += len(texts)

    def frame(self) -> pl.DataFrame:
        out = pl.DataFrame(
            {
                "query_sha256": self._q,
                "text_sha256": self._t,
                "score": np.concatenate(self._scores),
                "n_tokens": np.concatenate(self._tokens),
            },
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


def _lookup(store: Store, key: str, query_sha256: pl.Series) -> pl.DataFrame:
    """The cached scores of these query texts (with any chunk text): one read, however few of them are new."""
    with store.connect() as con:
        con.register("_wanted", pl.DataFrame({"query_sha256": query_sha256}).to_arrow())
        found = con.execute(
            f"""SELECT c.query_sha256, c.text_sha256, c.score, c.n_tokens
                FROM {CACHE_TABLE} c SEMI JOIN _wanted w USING (query_sha256) WHERE c.model_key = ?""",
            [key],
        ).pl()
        con.unregister("_wanted")
    return found.select([pl.col(c).cast(t) for c, t in PAIR_SCHEMA.items()])
