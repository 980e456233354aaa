"""Stable multi-passage question ids ``mq_00001``... (distinct from the single-chunk ``q_`` ids).

An id belongs to its chunk set (``set_id``) for good. The registry (table
``multipassage_id_registry``) maps set ids to question ids; a set already
registered keeps its id, new sets (in ascending set id order) get the next
numbers after the largest ever issued, and numbers are never reused.
"""
from __future__ import annotations

import re

import polars as pl

PREFIX = "mq_"
ID_RE = re.compile(r"^mq_(\d{5,})$")
REGISTRY_SCHEMA = {"set_id": pl.String, "query_id": pl.String}


def _number(query_id: str) -> int:
    m = ID_RE.match(query_id)
    if m is None:
        raise ValueError(f"multi-passage id registry holds {query_id!r}, which is not mq_NNNNN")
    return int(m.group(1))


def assign_question_ids(set_ids: list[str], registry: pl.DataFrame | None) -> tuple[dict[str, str], pl.DataFrame]:
    """Ids for ``set_ids`` and the updated registry (sorted by question id)."""
    registry = registry if registry is not None else pl.DataFrame(schema=REGISTRY_SCHEMA)
    known = dict(registry.select("set_id", "query_id").iter_rows())
    if len(set(known.values())) != len(known):
        raise ValueError("multi-passage id registry gives one question id to several chunk sets")
    next_number = max((_number(q) for q in known.values()), default=0) + 1
    ids = {}
    for sid in sorted(set(set_ids)):
        if sid not in known:
            known[sid] = f"{PREFIX}{next_number:05d}"
            next_number += 1
        ids[sid] = known[sid]
    updated = pl.DataFrame({"set_id": list(known), "query_id": list(known.values())}, schema=REGISTRY_SCHEMA)
    return ids, updated.sort(pl.col("query_id").str.slice(len(PREFIX)).cast(pl.Int64))
