"""Stable query ids ``q_00001``...

Rule: a query id belongs to its seed chunk id, for good. The registry (table
``query_id_registry``) maps seed chunk ids to query ids. Kept queries whose seed
is already registered keep that id; new seeds, taken in ascending seed chunk id
order, get the next numbers after the largest ever issued. Numbers are never
reused, so a query whose seed drops out leaves a gap, and editing or adding other
chunks never renumbers existing queries. On an empty registry the ids are simply
the kept queries numbered in seed chunk id order. The id follows the seed chunk,
not the question's wording: a rewritten question for the same chunk keeps its id
(the prompt hash on the row says which prompt wrote it).
"""
from __future__ import annotations

import re

import polars as pl

ID_RE = re.compile(r"^q_(\d{5,})$")
REGISTRY_SCHEMA = {"seed_chunk_id": pl.String, "query_id": pl.String}


def format_query_id(number: int) -> str:
    return f"q_{number:05d}"


def _number(query_id: str) -> int:
    m = ID_RE.match(query_id)
    if m is None:
        raise ValueError(f"query id registry holds {query_id!r}, which is not q_NNNNN")
    return int(m.group(1))


def assign_query_ids(seed_chunk_ids: list[str], registry: pl.DataFrame | None) -> tuple[dict[str, str], pl.DataFrame]:
    """Ids for ``seed_chunk_ids`` and the updated registry (sorted by query id)."""
    registry = registry if registry is not None else pl.DataFrame(schema=REGISTRY_SCHEMA)
    known = dict(registry.select("seed_chunk_id", "query_id").iter_rows())
    if len(set(known.values())) != len(known):
        raise ValueError("query id registry gives one query id to several seed chunks")
    next_number = max((_number(q) for q in known.values()), default=0) + 1
    ids: dict[str, str] = {}
    for seed in sorted(set(seed_chunk_ids)):
        if seed not in known:
            known[seed] = format_query_id(next_number)
            next_number += 1
        ids[seed] = known[seed]
    updated = pl.DataFrame(
        {"seed_chunk_id": list(known), "query_id": list(known.values())}, schema=REGISTRY_SCHEMA
    ).sort(pl.col("query_id").str.slice(2).cast(pl.Int64))
    return ids, updated
