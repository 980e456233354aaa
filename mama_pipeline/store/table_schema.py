"""A stored table's polars schema, read from the DDL the store enforces: the dtypes a read of the table returns."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import duckdb
import polars as pl

from mama_pipeline.common.derived_cache import kept
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
    """Every table's schema, kept on disk under the DDL's bytes and the DuckDB and polars versions
    (``derived_cache.kept``): deriving them costs a third of a second in every process that loads the definitions."""
    files = contract_files()
    sources = [duckdb.__version__.encode(), pl.__version__.encode()]
    sources += [f"{table}\0".encode() + path.read_bytes() for table, path in sorted(files.items())]

    def load(path: Path) -> dict[str, tuple[tuple[str, pl.DataType], ...]]:
        stored = pl.read_ipc_schema(path)
        if sorted(stored) != sorted(files):
            raise ValueError(f"{path}: other tables than the DDL's")
        return {table: tuple((f.name, f.dtype) for f in dtype.fields) for table, dtype in stored.items()}

    def dump(schemas: dict[str, tuple[tuple[str, pl.DataType], ...]], path: Path) -> None:
        pl.DataFrame(schema={table: pl.Struct(dict(columns)) for table, columns in schemas.items()}).write_ipc(path)

    return kept("table_schemas", sources, lambda: _derived(files), load, dump)


def _derived(files: dict[str, Path]) -> dict[str, tuple[tuple[str, pl.DataType], ...]]:
    """Every DDL run in one in-memory DuckDB, each empty table converted as the store converts a read."""
    schemas = {}
    with duckdb.connect() as con:
        for table, path in files.items():
            con.execute(path.read_text())
            empty = _polars(con.execute(f'SELECT * FROM "{table}"'))
            schemas[table] = tuple((name, dtype) for name, dtype in empty.schema.items() if name != PARTITION_COLUMN)
    return schemas
