"""Stable query ids: numbered by seed chunk id, never renumbered, never reused."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.queries._query_ids import REGISTRY_SCHEMA, assign_query_ids, format_query_id


def test_fresh_ids_follow_seed_chunk_order():
    ids, registry = assign_query_ids(["cc", "aa", "bb"], None)
    assert ids == {"aa": "q_00001", "bb": "q_00002", "cc": "q_00003"}
    assert registry.rows() == [("aa", "q_00001"), ("bb", "q_00002"), ("cc", "q_00003")]


def test_other_chunks_changing_does_not_renumber():
    _, registry = assign_query_ids(["aa", "bb", "cc"], None)
    # bb's text changed (new id b2), a new seed 00 sorts first, cc dropped out
    ids, registry = assign_query_ids(["00", "aa", "b2"], registry)
    assert ids == {"aa": "q_00001", "00": "q_00004", "b2": "q_00005"}
    # cc comes back: it gets its old id, and retired numbers are never reused
    ids, registry = assign_query_ids(["aa", "cc", "zz"], registry)
    assert ids == {"aa": "q_00001", "cc": "q_00003", "zz": "q_00006"}
    assert registry.height == 6


def test_same_inputs_same_registry():
    _, first = assign_query_ids(["x", "y"], None)
    ids, second = assign_query_ids(["y", "x"], first)
    assert second.equals(first) and ids == {"x": "q_00001", "y": "q_00002"}


def test_numbers_past_five_digits_sort_numerically():
    registry = pl.DataFrame({"seed_chunk_id": ["a"], "query_id": [format_query_id(99999)]}, schema=REGISTRY_SCHEMA)
    ids, updated = assign_query_ids(["a", "b"], registry)
    assert ids["b"] == "q_100000"
    assert updated.get_column("query_id").to_list() == ["q_99999", "q_100000"]


def test_corrupt_registry_is_refused():
    bad = pl.DataFrame({"seed_chunk_id": ["a", "b"], "query_id": ["q_00001", "q_00001"]}, schema=REGISTRY_SCHEMA)
    with pytest.raises(ValueError, match="one query id to several seed chunks"):
        assign_query_ids(["a"], bad)
    odd = pl.DataFrame({"seed_chunk_id": ["a"], "query_id": ["query-1"]}, schema=REGISTRY_SCHEMA)
    with pytest.raises(ValueError, match="not q_NNNNN"):
        assign_query_ids(["a"], odd)
