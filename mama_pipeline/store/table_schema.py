"""A stored table's polars schema, read from the DDL the store enforces: the dtypes a read of the table returns."""

from __future__ import annotations

from functools import cache

import duckdb
import polars as pl

from mama_pipeline.common.sql_contracts import contract_files
from mama_pipeline.store.duckdb_store import PARTITION_COLUMN, _polars


def table_schema(table: str) -> dict[str, pl.DataType]:
    """Column -> polars dtype of ``table``, in the DDL's order, without the partition column (a new dict each
    call). A table without DDL is a KeyError."""
    schemas = _every_schema()
    if table not in schemas:
        raise KeyError(f"table {table!r} has no DDL under sql/tables/<area>/")
    return dict(schemas[table])


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
