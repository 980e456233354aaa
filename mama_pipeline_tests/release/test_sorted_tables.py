"""Sorted copies of the release's sources: DuckDB sorts (nulls first, as polars does), keeps what is asked, makes
each copy once and removes them on close."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.release._sorted_tables import SortedTables, StoredTable, columns_of
from mama_pipeline.store import Store

ROWS = pl.DataFrame(
    {
        "query_id": ["q2", "q1", None, "q1", "q10"],
        "rank": [1, 2, 5, 1, 3],
        "retriever": ["bm25", "bm25", "bm25", "dense", "bm25"],
    }
)


def test_a_frame_is_sorted_with_nulls_first_and_filtered(tmp_path):
    with SortedTables(tmp_path / "scratch") as tables:
        got = tables.scan(ROWS, ["query_id", "rank"], ["query_id", "rank"], '"rank" <= 3').collect()
        got_all = tables.scan(ROWS, ["query_id"], ["query_id"]).collect()
    assert got.rows() == [("q1", 1), ("q1", 2), ("q10", 3), ("q2", 1)]  # byte order: q10 before q2
    assert got_all["query_id"].to_list() == [None, "q1", "q1", "q10", "q2"]


def test_a_stored_table_is_read_by_partition_without_the_partition_column(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    store.write_table("fx_rankings", ROWS.filter(pl.col("retriever") == "bm25"), partition="bm25")
    store.write_table("fx_rankings", ROWS.filter(pl.col("retriever") == "dense"), partition="dense")
    source = StoredTable(store, "fx_rankings", ("dense",))
    assert columns_of(source) == ["query_id", "rank", "retriever"]
    with SortedTables(tmp_path / "scratch") as tables:
        got = tables.scan(source, columns_of(source), ["query_id"]).collect()
    assert got.rows() == [("q1", 1, "dense")]
    with pytest.raises(KeyError, match="table 'missing' is not in"):
        columns_of(StoredTable(store, "missing"))


def test_each_copy_is_made_once_and_removed_on_close(tmp_path):
    tables = SortedTables(tmp_path)
    first = tables.scan(ROWS, ["query_id"], ["query_id"])
    again = tables.scan(ROWS, ["query_id"], ["query_id"])
    other = tables.scan(ROWS, ["rank"], ["rank"])
    scratch = [p for p in tmp_path.iterdir()]
    assert len(scratch) == 1 and len(list(scratch[0].glob("*.parquet"))) == 2
    assert again is first and other is not first
    tables.close()
    assert list(tmp_path.iterdir()) == []
