"""The judge's failures on the track: counted per label table, bounded by ``llm.judge.max_failure_rate``, listed."""

from __future__ import annotations

import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.llm.failure_bounds import StageFailures, pair_label_failures

RELEVANCE_UNIT, FACTS_UNIT = "multi-passage pooled pairs (relevance)", "multi-passage pooled pairs (facts)"


def label_bounds(labels: pl.DataFrame, fact_labels: pl.DataFrame, bound: float) -> list[StageFailures]:
    """Failed pairs of the relevance labels and of the fact labels, each under ``bound``."""
    return [pair_label_failures(labels, RELEVANCE_UNIT, bound), pair_label_failures(fact_labels, FACTS_UNIT, bound)]


def over_bound(stages: list[StageFailures]) -> str | None:
    """One line naming every label table above its bound, or None."""
    over = [s.describe() for s in stages if s.over]
    return "; ".join(over) or None


def failure_listing(outcomes: pl.DataFrame, limit: int = 50) -> dict:
    """Metadata listing a label table's failed pairs with their reasons (the first ``limit``)."""
    failed = outcomes.filter(pl.col("status") == "failed")
    return {
        "failed": failed.height,
        "failures": md_table(failed.select("query_id", "chunk_id", "failure_reason").head(limit)),
    }
