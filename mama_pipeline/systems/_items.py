"""The mamabench items a system answers: tracks, scope segments and the seeded sample.

Items come from the ``mamabench_items`` table (item_id, pool, set_type,
category, item_json). Pre-scoped pools carry no scope category; they are
reported under ``PRESCOPED``.
"""

from __future__ import annotations

import hashlib
import json

import polars as pl

from mama_pipeline.store.table_schema import table_schema

TRACK_OF_SET_TYPE = {"mcq": "mcq", "open_ended": "short_answer", "open_ended_rubric": "rubric"}
PRESCOPED = "PRESCOPED"
ITEMS_SCHEMA = table_schema("systems_items")


def benchmark_items(items: pl.DataFrame) -> pl.DataFrame:
    """One row per item with its track and scope segment; a malformed row raises naming its item."""
    missing = [c for c in ("item_id", "pool", "set_type", "category", "item_json") if c not in items.columns]
    if missing:
        raise ValueError(f"mamabench_items: missing column(s) {missing}")
    dup = items.filter(pl.col("item_id").is_duplicated())
    if dup.height:
        raise ValueError(f"mamabench_items: item_id {dup['item_id'][0]!r} appears {dup.height} times")
    rows = []
    for item_id, pool, set_type, category, raw in items.select(
        "item_id", "pool", "set_type", "category", "item_json"
    ).iter_rows():
        if set_type not in TRACK_OF_SET_TYPE:
            raise ValueError(f"mamabench_items: item {item_id!r} has unknown set_type {set_type!r}")
        try:
            item = json.loads(raw)
        except (TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"mamabench_items: item {item_id!r}: item_json is not JSON ({exc})") from None
        rubrics = item.get("rubrics") or []
        rows.append((item_id, TRACK_OF_SET_TYPE[set_type], pool, category or PRESCOPED, raw, len(rubrics)))
    return pl.DataFrame(rows, schema=ITEMS_SCHEMA, orient="row").sort("item_id")


def sample_items(items: pl.DataFrame, per_track: int, seed: int, max_rubric_criteria: int = 0) -> pl.DataFrame:
    """A seeded sample of each track (all items when ``per_track`` is 0), ordered by item_id.

    Items are ranked by a hash of (seed, item_id), so the sample is stable and a
    larger size extends a smaller one. ``max_rubric_criteria`` leaves out rubric
    items with more criteria (a smoke-test economy; 0 keeps every item).
    """
    if max_rubric_criteria:
        items = items.filter((pl.col("track") != "rubric") | (pl.col("n_criteria") <= max_rubric_criteria))
    if not per_track:
        return items.sort("item_id")
    order = [hashlib.sha256(f"{seed}:{i}".encode()).hexdigest() for i in items["item_id"].to_list()]
    ranked = items.with_columns(pl.Series("_order", order, dtype=pl.String)).sort("_order")
    picked = ranked.filter(pl.int_range(pl.len()).over("track") < per_track)
    return picked.drop("_order").sort("item_id")


def over_max_criteria(items: pl.DataFrame, max_rubric_criteria: int) -> int:
    """How many rubric items ``max_rubric_criteria`` leaves out of the sample (0 when it is 0)."""
    if not max_rubric_criteria:
        return 0
    return items.filter((pl.col("track") == "rubric") & (pl.col("n_criteria") > max_rubric_criteria)).height
