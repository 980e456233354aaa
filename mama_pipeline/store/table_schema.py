"""A stored table's polars schema, read from the DDL the store enforces: the dtypes a read of the table returns."""

from __future__ import annotations

from functools import cache

import duckdb
import polars as pl

from mama_pipeline.common.sql_contracts import contract_files
from mama_pipeline.store.duckdb_store import PARTITION_COLUMN, _polars


def table_schema(table: str, without: tuple[str, ...] = ()) -> dict[str, pl.DataType]:
    """Column -> polars dtype of ``table``, in the DDL's order, without the partition column (a new dict each
    call); ``without``: columns the frame gets only when it is written (e.g. the benchmark of a leaderboard row),
    each of which must be the table's. A table without DDL is a KeyError."""
    schemas = _every_schema()
    if table not in schemas:
        raise KeyError(f"table {table!r} has no DDL under sql/tables/<area>/")
    schema = dict(schemas[table])
    unknown = [c for c in without if c not in schema]
    if unknown:
        raise KeyError(f"table {table!r} has no column(s) {unknown}")
    return {name: dtype for name, dtype in schema.items() if name not in without}


@cache
def _every_schema() -> dict[str, tuple[tuple[str, pl.DataType], ...]]:
    """Every DDL run in one in-memory DuckDB, each empty table converted as the store converts a read."""
    schemas = {}
    with duckdb.connect() as con:
        for table, path in contract_files().items():
            con.execute(path.read_text())
            empty = _polars(con.execute(f'SELECT * FROM "{table}"'))
            schemas[table] = tuple((name, dtype) for name, dtype in empty.schema.items() if name != PARTITION_COLUMN)
    return schemas
