"""Adaptive judging: the rounds an adjudication method chooses, then the uniform remainder sample.

Each round's pairs go to :func:`~mama_pipeline.judging._judge.judge_pairs` together (labels committed to the label
store, stored labels reused); a pair is relevant to the method when its score reaches the lenient cut. What comes
out is the judged set: one row per pair asked (``role`` ``round`` or ``sample``), the rest of the pool unjudged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel

from mama_pipeline.judging._adjudication_order import NO_LABEL, NOT_RELEVANT, RELEVANT, adjudicate, run_lists
from mama_pipeline.judging._judge import judge_pairs, merge_metadata, stored_chunks
from mama_pipeline.judging._unjudged_estimate import remainder_sample
from mama_pipeline.judging.settings import JudgingSettings
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.store import Store
from mama_pipeline.store.table_schema import table_schema

JUDGED_SET_SCHEMA = table_schema("judged_set")


@dataclass
class AdaptiveRun:
    judged: pl.DataFrame  # JUDGED_SET_SCHEMA
    metadata: dict[str, Any]


def pool_arms(pool: pl.DataFrame, ranked: pl.DataFrame) -> pl.DataFrame:
    """The stored ranks (query_id, retriever, rank, chunk_id) of the pooled pairs by the retrievers that pooled
    them (a pair's ``retrievers``): a deeper rank of a retriever that did not pool the pair is left out."""
    pooled_by = pool.select("query_id", "chunk_id", retriever="retrievers").explode("retriever").drop_nulls()
    return ranked.join(pooled_by, on=["query_id", "chunk_id", "retriever"], how="semi")


def judge_adaptively(
    client: LLMClient,
    store: Store,
    pool: pl.DataFrame,
    ranked: pl.DataFrame,
    queries: pl.DataFrame,
    settings: JudgingSettings,
    answer_model: type[BaseModel],
) -> AdaptiveRun:
    """Judge ``pool`` (query_id, chunk_id, sorted) adaptively under ``settings``; ``ranked``: :func:`pool_arms`."""
    pool = pool.select("query_id", "chunk_id").sort("query_id", "chunk_id")
    status: dict[int, str] = {}
    meta: dict[str, Any] = {}

    def judge(idx: np.ndarray) -> np.ndarray:
        pairs = pool[idx]
        run = judge_pairs(
            client, store, pairs, queries, stored_chunks(store, pairs), answer_model, batch_pairs=settings.batch_pairs
        )
        merge_metadata(meta, {"asked": run.asked, "http_calls": run.calls, "new_labels": run.new_labels})
        out = pairs.with_row_index("i").join(run.outcomes, on=["query_id", "chunk_id"], how="left").sort("i")
        label = np.where(
            out["status"].to_numpy() == "labelled",
            np.where(out["score"].fill_null(-1).to_numpy() >= settings.lenient_cut, RELEVANT, NOT_RELEVANT),
            NO_LABEL,
        )
        status.update(zip(idx.tolist(), out["status"].to_list()))
        return label

    budget = settings.budget_pairs(pool.height)
    done = adjudicate(
        run_lists(pool, ranked),
        settings.method,
        judge,
        budget,
        settings.round_pairs,
        settings.seed,
        settings.stop_yield,
        settings.discount,
    )
    chosen = np.zeros(pool.height, dtype=bool)
    chosen[done.order] = True
    sample = remainder_sample(np.flatnonzero(~chosen), settings.remainder_sample, settings.seed)
    if sample.size:
        judge(sample)
    last = int(done.rounds.max()) + 1 if done.rounds.size else 0
    idx = np.concatenate([done.order, sample])
    judged = pool[idx].with_columns(
        role=pl.Series(["round"] * done.order.size + ["sample"] * sample.size, dtype=pl.String),
        round=pl.Series(np.concatenate([done.rounds, np.full(sample.size, last)]), dtype=pl.Int64),
        position=pl.int_range(pl.len(), dtype=pl.Int64),
        status=pl.Series([status[i] for i in idx.tolist()], dtype=pl.String),
    )
    meta = {
        "strategy": "adaptive",
        "method": settings.method,
        "pooled_pairs": pool.height,
        "budget_pairs": budget,
        "round_pairs": done.order.size,
        "rounds": last,
        "stopped": done.stopped,
        "remainder_sample_pairs": int(sample.size),
        "judged_pairs": int(idx.size),
        "judged_share": round(idx.size / pool.height, 6) if pool.height else 0.0,
        "unjudged_pairs": pool.height - int(idx.size),
        "relevant_found_in_rounds": int((done.labels == RELEVANT).sum()),
        **meta,
    }
    return AdaptiveRun(judged.select(list(JUDGED_SET_SCHEMA)).cast(JUDGED_SET_SCHEMA), meta)
