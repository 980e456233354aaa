"""Per-source counts from the accounting: upstream rows, fates, kept and yield."""

from __future__ import annotations

import polars as pl

from mama_pipeline.mamabench._pools import POOLS
from mama_pipeline.store.table_schema import table_schema

STATUSES = ("kept", "refused", "out_of_scope", "unclassified")
YIELD_SCHEMA = table_schema("mamabench_yield")


def yield_table(accounting: pl.DataFrame) -> pl.DataFrame:
    """One row per pool in the fixed pool order; yield = kept / upstream rows, in percent."""
    counts = {(p, s): n for p, s, n in accounting.group_by("pool", "status").len().iter_rows()}
    unknown = set(accounting["status"].unique()) - set(STATUSES)
    if unknown:
        raise ValueError(f"accounting has statuses outside {STATUSES}: {sorted(unknown)}")
    rows = []
    for p in POOLS:
        by = [counts.get((p.name, s), 0) for s in STATUSES]
        total = sum(by)
        rows.append(
            (p.name, p.dataset, p.track, p.scoping, total, *by, round(100 * by[0] / total, 1) if total else None)
        )
    return pl.DataFrame(rows, schema=YIELD_SCHEMA, orient="row")


def refusals_by_reason(accounting: pl.DataFrame) -> pl.DataFrame:
    """Refused and unclassified rows per pool and reason; ``in_prescope`` splits pre-scoped pools."""
    return (
        accounting.filter(pl.col("status").is_in(["refused", "unclassified"]))
        .group_by("pool", "status", "reason", "in_prescope")
        .len("rows")
        .sort("pool", "status", "reason", "in_prescope", nulls_last=True)
    )


def cosmetic_defect_counts(accounting: pl.DataFrame) -> pl.DataFrame:
    """Kept items per pool and cosmetic defect."""
    return (
        accounting.filter(pl.col("status") == "kept")
        .explode("cosmetic_defects")
        .drop_nulls("cosmetic_defects")
        .group_by("pool", pl.col("cosmetic_defects").alias("defect"))
        .len("items")
        .sort("pool", "defect")
    )
