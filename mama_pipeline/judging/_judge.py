"""Judge (query, chunk) pairs: reuse stored labels, ask the judge for the holes only.

Holes are asked grouped by query (sorted by query id, then chunk id) so that
consecutive requests share the system message and the query as a prompt
prefix. They go to the shared client in batches of ``batch_pairs``, asked one after
another without a pause (:meth:`LLMClient.run_ahead`): the labels of a batch are
committed, in order, while the next is asked. Every pair ends either
``labelled`` or ``failed`` with its reason; a failed answer never becomes a label.
Stored labels are reused only from the same judge identity (endpoint, model and
decoding, ``LLMClient.identity``) and prompt hash.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl
from pydantic import BaseModel

from mama_pipeline.judging._label_score import score_verdicts
from mama_pipeline.judging._label_store import LABEL_SCHEMA, insert_labels, stored_labels
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, label_prompt_hash, render_pair
from mama_pipeline.llm.client import LLMClient, LLMRequest, RunReport
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.store import Store

CHUNK_COLUMNS = ["chunk_id", "text", "source", "page", "corpus_version"]  # what a judged pair reads of its chunk
CORPUS_TABLE = "corpus_chunks"  # the corpus group's asset and table
OUTCOME_SCHEMA = {
    "query_id": pl.String,
    "chunk_id": pl.String,
    "status": pl.String,  # labelled | failed
    "failure_reason": pl.String,
    "reused": pl.Boolean,  # label taken from the store, not asked in this run
    **{k: v for k, v in LABEL_SCHEMA.items() if k not in ("query_id", "chunk_id")},
}


@dataclass
class JudgeRun:
    outcomes: pl.DataFrame  # one row per input pair, OUTCOME_SCHEMA
    judge_model: str
    prompt_hash: str
    judge_identity: str = ""
    asked: int = 0  # pairs sent to the client (cache hits included)
    calls: int = 0  # HTTP calls made
    new_labels: int = 0  # labels committed by this run
    client_metadata: dict[str, Any] = field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        status = self.outcomes.get_column("status")
        return {
            "judge_model": self.judge_model,
            "judge_identity": self.judge_identity,  # endpoint + model + decoding
            "label_prompt_hash": self.prompt_hash,  # template + answer schema
            "pairs": self.outcomes.height,
            "labelled": int((status == "labelled").sum()),
            "failed": int((status == "failed").sum()),
            "reused_labels": int(self.outcomes.get_column("reused").sum()),
            "asked": self.asked,
            "http_calls": self.calls,
            "new_labels": self.new_labels,
            **self.client_metadata,
        }


def stored_chunks(store: Store, pairs: pl.DataFrame) -> pl.DataFrame:
    """The stored chunks (CHUNK_COLUMNS) of the pairs' chunk ids, in corpus order: what judging them reads."""
    ids = pairs.get_column("chunk_id").unique().to_list()
    return store.read_table(CORPUS_TABLE, columns=CHUNK_COLUMNS, where={"chunk_id": ids})


def _item_id(query_id: str, chunk_id: str) -> str:
    return f"{query_id}|{chunk_id}"


def _failed(pairs: pl.DataFrame, reason: str | None = None) -> pl.DataFrame:
    """Pairs listed as failed, with ``reason`` or their own ``failure_reason`` column."""
    reason_expr = pl.col("failure_reason") if reason is None else pl.lit(reason)
    return pairs.select("query_id", "chunk_id", failure_reason=reason_expr).with_columns(
        status=pl.lit("failed"), reused=pl.lit(False)
    )


def _require_unique(df: pl.DataFrame, key: str, table: str) -> None:
    dupes = df.filter(pl.col(key).is_duplicated())
    if dupes.height:
        raise ValueError(f"{table} holds {key} {dupes[key][0]!r} more than once ({dupes.height} rows share an id)")


def merge_metadata(total: dict[str, Any], batch: dict[str, Any]) -> None:
    """Add one batch's (or run's) metadata to ``total``: counts summed, the rest kept from the first."""
    for key, value in batch.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key in total:
            total[key] = round(total[key] + value, 3)
        else:
            total.setdefault(key, value)


def _sorted_pairs(pairs: pl.DataFrame) -> pl.DataFrame:
    """The pairs' (query_id, chunk_id), sorted; a ValueError names a pair given more than once."""
    pairs = pairs.select("query_id", "chunk_id").sort("query_id", "chunk_id")
    dupes = pairs.filter(pairs.is_duplicated())
    if dupes.height:
        q, c = dupes.row(0)
        raise ValueError(f"pairs to judge hold ({q}, {c}) more than once ({dupes.height} duplicate rows)")
    return pairs


def _joined(
    pairs: pl.DataFrame, queries: pl.DataFrame, chunks: pl.DataFrame
) -> tuple[pl.DataFrame, list[pl.DataFrame]]:
    """The pairs with their query and chunk, and the pairs failed for a missing query or chunk."""
    pairs = _sorted_pairs(pairs)
    _require_unique(queries, "query_id", "queries table")
    _require_unique(chunks, "chunk_id", "chunks table")
    joined = pairs.join(queries.select("query_id", "query_text"), on="query_id", how="left").join(
        chunks.select(CHUNK_COLUMNS), on="chunk_id", how="left"
    )
    failed = [
        _failed(joined.filter(pl.col("query_text").is_null()), "query_id not in the queries table"),
        _failed(
            joined.filter(pl.col("query_text").is_not_null() & pl.col("text").is_null()),
            "chunk_id not in the current corpus",
        ),
    ]
    return joined.filter(pl.col("query_text").is_not_null() & pl.col("text").is_not_null()), failed


def _holes(joined: pl.DataFrame, stored: pl.DataFrame) -> pl.DataFrame:
    return joined.join(stored.select("query_id", "chunk_id"), on=["query_id", "chunk_id"], how="anti").sort(
        "query_id", "chunk_id"
    )


def pair_batches(holes: pl.DataFrame, batch_pairs: int) -> Iterator[tuple[list[dict[str, Any]], list[LLMRequest]]]:
    """The holes' rows and judge requests, ``batch_pairs`` at a time."""
    for start in range(0, holes.height, batch_pairs):
        rows = holes.slice(start, batch_pairs).to_dicts()
        yield (
            rows,
            [
                LLMRequest(
                    _item_id(r["query_id"], r["chunk_id"]),
                    render_pair(r["query_text"], r["source"], r["page"], r["text"]),
                )
                for r in rows
            ],
        )


def judge_pair_slices(
    client: LLMClient,
    store: Store,
    pair_slices: Callable[[], Iterable[pl.DataFrame]],
    queries: pl.DataFrame,
    answer_model: type[BaseModel],
    template: PromptTemplate = RELEVANCE_JUDGE,
    batch_pairs: int = 16384,
    expected_pairs: int | None = None,
) -> Iterator[JudgeRun]:
    """:func:`judge_pairs` for each slice of pairs (query_id, chunk_id) that ``pair_slices()`` gives, its chunks
    read from the store when it is judged, so memory grows with a slice; the batches of all slices go to the
    client as one stream, so the judge is not idle while a slice's holes are found. Before the first slice is
    sent the whole run is checked against the stage's budget (only a budgeted stage reads ``pair_slices()``
    twice). ``expected_pairs``: the pairs all slices hold, if known: the client's progress lines then estimate
    the time left (as if every pair were asked; a stored label or a cached answer makes it shorter)."""

    def requests() -> Iterator[tuple[PromptTemplate, type[BaseModel], list[LLMRequest]]]:
        for pairs in pair_slices():
            holes = judge_holes(client, store, pairs, queries, stored_chunks(store, pairs), answer_model, template)
            yield from ((template, answer_model, batch) for _, batch in pair_batches(holes, batch_pairs))

    client.check_budget(requests())
    opened: dict[int, tuple[JudgeRun, list[pl.DataFrame]]] = {}

    def batches() -> Iterator[tuple[tuple[int, list[dict[str, Any]] | None], list[LLMRequest], Any]]:
        for i, pairs in enumerate(pair_slices()):
            run, parts, holes = _opened(
                client, store, pairs, queries, stored_chunks(store, pairs), answer_model, template
            )
            opened[i] = run, parts
            _, looked_up = _looked_up(client, holes, answer_model, template, batch_pairs)
            yield from (((i, rows), requests, known) for rows, requests, known in looked_up)
            yield (i, None), [], None  # the slice's end

    with contextlib.closing(client.run_ahead(template, answer_model, batches(), expected_pairs)) as answered:
        for (i, rows), report in answered:
            if rows is None:
                yield _closed(*opened.pop(i))
            else:
                _record(client, store, *opened[i], rows, report)


def judge_holes(
    client: LLMClient,
    store: Store,
    pairs: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    answer_model: type[BaseModel],
    template: PromptTemplate = RELEVANCE_JUDGE,
) -> pl.DataFrame:
    """The pairs :func:`judge_pairs` would ask the judge about (no stored label), asking nothing."""
    return _opened(client, store, pairs, queries, chunks, answer_model, template)[2]


def hole_slices(
    client: LLMClient,
    store: Store,
    pairs: pl.DataFrame,
    queries: pl.DataFrame,
    answer_model: type[BaseModel],
    slice_pairs: int,
    template: PromptTemplate = RELEVANCE_JUDGE,
) -> Iterator[pl.DataFrame]:
    """The rows of :func:`judge_holes` (``chunks``: the store's), in order, each slice the holes of whole queries,
    about ``slice_pairs`` of them: the pairs labelled are asked of the label store once (which, not their labels),
    and each slice's chunks are read when it is joined, so memory grows with a slice, not with the texts."""
    pairs = _sorted_pairs(pairs)
    _require_unique(queries, "query_id", "queries table")
    labelled = stored_labels(
        store,
        client.model,
        label_prompt_hash(template, answer_model),
        pairs,
        judge_identity=client.identity,
        columns=("query_id", "chunk_id"),
    )
    holes = pairs.join(labelled, on=["query_id", "chunk_id"], how="anti", maintain_order="left")
    ids = holes.get_column("query_id")
    start = 0
    while start < holes.height:
        end = int(ids.search_sorted(ids[min(start + slice_pairs, holes.height) - 1], side="right"))
        part = holes.slice(start, end - start)
        yield _joined(part, queries, stored_chunks(store, part))[0].sort("query_id", "chunk_id")
        start = end


def judge_pairs(
    client: LLMClient,
    store: Store,
    pairs: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    answer_model: type[BaseModel],
    template: PromptTemplate = RELEVANCE_JUDGE,
    batch_pairs: int = 16384,
) -> JudgeRun:
    """Label every pair of ``pairs`` (query_id, chunk_id) under ``client``'s judge model.

    ``queries`` needs query_id, query_text; ``chunks`` needs CHUNK_COLUMNS
    (those of the pairs' chunks suffice).
    """
    run, parts, holes = _opened(client, store, pairs, queries, chunks, answer_model, template)
    read, batches = _looked_up(client, holes, answer_model, template, batch_pairs)
    # the whole run against the stage's budget before the first batch is sent, from the cache read just made
    client.check_budget(((template, answer_model, requests) for _, requests in pair_batches(holes, batch_pairs)), read)
    with contextlib.closing(client.run_ahead(template, answer_model, batches, client.to_send(read))) as answered:
        for rows, report in answered:
            _record(client, store, run, parts, rows, report)
    return _closed(run, parts)


def _looked_up(
    client: LLMClient, holes: pl.DataFrame, answer_model: type[BaseModel], template: PromptTemplate, batch_pairs: int
) -> tuple[tuple[list[list[str]], dict[str, Any]], Iterator[tuple[list[dict[str, Any]], list[LLMRequest], Any]]]:
    """The holes' cache keys and cached answers, read at once (:meth:`LLMClient.look_up`), and their batches for
    :meth:`LLMClient.run_ahead`: (rows, requests, (keys, cached answers))."""
    keys, cached = client.look_up(
        template, answer_model, (requests for _, requests in pair_batches(holes, batch_pairs))
    )
    batches = zip(keys, pair_batches(holes, batch_pairs), strict=True)
    return (keys, cached), ((rows, requests, (k, cached)) for k, (rows, requests) in batches)


def _opened(
    client: LLMClient,
    store: Store,
    pairs: pl.DataFrame,
    queries: pl.DataFrame,
    chunks: pl.DataFrame,
    answer_model: type[BaseModel],
    template: PromptTemplate,
) -> tuple[JudgeRun, list[pl.DataFrame], pl.DataFrame]:
    """A run of ``pairs`` before anything is asked: the run, its outcomes known so far (failed for a missing query
    or chunk, labels reused from the store) and the holes to ask."""
    prompt_hash = label_prompt_hash(template, answer_model)
    identity = client.identity
    run = JudgeRun(
        outcomes=pl.DataFrame(schema=OUTCOME_SCHEMA),
        judge_model=client.model,
        prompt_hash=prompt_hash,
        judge_identity=identity,
    )
    joined, parts = _joined(pairs, queries, chunks)
    stored = stored_labels(store, client.model, prompt_hash, joined, judge_identity=identity)
    parts.append(
        stored.with_columns(status=pl.lit("labelled"), failure_reason=pl.lit(None, pl.String), reused=pl.lit(True))
    )
    return run, parts, _holes(joined, stored)


def _record(
    client: LLMClient,
    store: Store,
    run: JudgeRun,
    parts: list[pl.DataFrame],
    rows: list[dict[str, Any]],
    report: RunReport,
) -> None:
    """Commit the labels of one answered batch (``rows``: its holes) and list its failures among ``parts``."""
    run.asked += len(rows)
    run.calls += report.calls
    merge_metadata(run.client_metadata, report.metadata())
    labels, failures = [], []
    for r, res in zip(rows, report.results, strict=True):
        if res.ok:
            labels.append(
                {
                    "query_id": r["query_id"],
                    "chunk_id": r["chunk_id"],
                    "judge_model": client.model,
                    "judge_identity": run.judge_identity,
                    "prompt_hash": run.prompt_hash,
                    **score_verdicts(res.value),
                    "reasoning": res.reasoning,
                    "judge_endpoint": client.endpoint,
                    "corpus_version": r["corpus_version"],
                    "cache_key": res.cache_key,
                }
            )
        else:
            failures.append(
                {"query_id": r["query_id"], "chunk_id": r["chunk_id"], "failure_reason": f"{res.status}: {res.error}"}
            )
    label_df = pl.DataFrame(labels, schema=LABEL_SCHEMA)
    run.new_labels += insert_labels(store, label_df)
    parts.append(
        label_df.with_columns(status=pl.lit("labelled"), failure_reason=pl.lit(None, pl.String), reused=pl.lit(False))
    )
    if failures:
        fdf = pl.DataFrame(failures, schema={"query_id": pl.String, "chunk_id": pl.String, "failure_reason": pl.String})
        parts.append(_failed(fdf))


def _closed(run: JudgeRun, parts: list[pl.DataFrame]) -> JudgeRun:
    """The run with its outcomes: one row per input pair."""
    frames = [pl.DataFrame(schema=OUTCOME_SCHEMA)] + [p for p in parts if p.height]
    run.outcomes = (
        pl.concat(frames, how="diagonal_relaxed")
        .select([pl.col(c).cast(t) for c, t in OUTCOME_SCHEMA.items()])
        .sort("query_id", "chunk_id")
    )
    return run
