"""From the gate's answers to kept queries, every decision counted.

Each sampled chunk gets exactly one status, checked in this order:

- ``llm_failed``: the client returned no valid answer (parse or transport failure);
  the error is kept and nothing is made up in its place;
- ``not_answerable``: the gate answered ``query: null``;
- ``empty_query``: the question is empty or only whitespace or quotes;
- ``too_long``: the question has more than ``max_words`` words (split on
  whitespace); it is dropped, not truncated, since a cut question changes meaning;
- ``duplicate_query``: the question equals another's up to case, whitespace and
  trailing ``?.!``; the one with the smallest seed chunk id is kept;
- ``kept``.

A kept question is stored whitespace-collapsed, with surrounding quotes removed.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from mama_pipeline.llm.client import LLMResult
from mama_pipeline.store.table_schema import table_schema

STATUSES = ("kept", "not_answerable", "empty_query", "too_long", "duplicate_query", "llm_failed")

DECISION_SCHEMA = table_schema("query_gate_decisions")


def normalise_query(text: str) -> str:
    """Collapse whitespace and drop quotes wrapped around the whole question."""
    text = " ".join(text.split())
    while len(text) >= 2 and text[0] in "\"'“‘" and text[-1] in "\"'”’":
        text = text[1:-1].strip()
    return text


def duplicate_key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip("?.! ")


def gate_decisions(
    sampled: pl.DataFrame,
    results: Sequence[LLMResult],
    *,
    max_words: int,
    model: str,
    prompt_hash: str,
    temperature: float,
) -> pl.DataFrame:
    """One decision row per sampled chunk (``results`` in the order of ``sampled``)."""
    if len(results) != sampled.height:
        raise ValueError(f"{len(results)} answers for {sampled.height} sampled chunks")
    rows = []
    for chunk, res in zip(sampled.iter_rows(named=True), results):
        if res.item_id != chunk["chunk_id"]:
            raise ValueError(f"answer for {res.item_id} where {chunk['chunk_id']} was expected")
        value = res.value or {}
        raw = value.get("query") if res.ok else None
        text = normalise_query(raw) if raw is not None else None
        words = len(text.split()) if text is not None else None
        if not res.ok:
            status = "llm_failed"
        elif raw is None:
            status = "not_answerable"
        elif not text:
            status = "empty_query"
        elif words > max_words:
            status = "too_long"
        else:
            status = "kept"
        rows.append(
            {
                "seed_chunk_id": chunk["chunk_id"],
                "source": chunk["source"],
                "tier": chunk["tier"],
                "status": status,
                "query_text": text or None,
                "raw_query": raw,
                "words": words,
                "reason": value.get("reason"),
                "reasoning": res.reasoning,
                "error": res.error,
                "model": model,
                "prompt_hash": prompt_hash,
                "temperature": temperature,
                "corpus_version": chunk["corpus_version"],
            }
        )
    decisions = pl.DataFrame(rows, schema=DECISION_SCHEMA).sort("seed_chunk_id")
    return _mark_duplicates(decisions)


def _mark_duplicates(decisions: pl.DataFrame) -> pl.DataFrame:
    """Keep the first (smallest seed chunk id) of questions equal up to case and punctuation."""
    first_of: dict[str, str] = {}
    statuses = []
    for status, text, seed in decisions.select("status", "query_text", "seed_chunk_id").iter_rows():
        if status == "kept":
            key = duplicate_key(text)
            if key in first_of:
                status = "duplicate_query"
            else:
                first_of[key] = seed
        statuses.append(status)
    return decisions.with_columns(pl.Series("status", statuses, dtype=pl.String))


def status_counts(decisions: pl.DataFrame) -> dict[str, int]:
    """Decisions per status, every status present (zero when none)."""
    counts = dict(decisions.group_by("status").len().rows())
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def keep_rates(decisions: pl.DataFrame, by: str) -> pl.DataFrame:
    """Sampled, answered, kept and keep rate (kept / sampled) per ``tier`` or ``source``."""
    return (
        decisions.group_by(by)
        .agg(
            pl.len().alias("sampled"),
            (pl.col("status") != "llm_failed").sum().alias("answered"),
            (pl.col("status") == "kept").sum().alias("kept"),
        )
        .with_columns((pl.col("kept") / pl.col("sampled")).round(4).alias("keep_rate"))
        .sort(by)
    )
