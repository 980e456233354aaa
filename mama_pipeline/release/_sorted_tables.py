"""Release tables sorted by DuckDB into scratch parquet files and scanned lazily, so that a release's memory
does not grow with its rows.

DuckDB's ORDER BY spills to disk under its memory limit (polars' streaming sort does not bound its memory);
polars then streams the sorted rows into the release files. A source is a frame (tests, small tables) or a
table of the store (:class:`StoredTable`); both are sorted by the same SQL, with nulls first as polars sorts
them. The sorted copy is written by one DuckDB thread in row groups of a fixed size: the row groups polars
streams, and with them the pages of a list column in a release file, depend on the rows alone.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb
import polars as pl

from mama_pipeline.store import BOUNDED, PARTITION_COLUMN, Store

ROW_GROUP_ROWS = 100_000  # of a sorted copy (DuckDB rounds it up to whole vectors of 2,048 rows)
SETTINGS = {**BOUNDED, "threads": 1}  # what does not fit DuckDB's memory limit spills to disk


@dataclass(frozen=True)
class StoredTable:
    """A table of the store (some of its partitions) that the release reads."""

    store: Store
    table: str
    partitions: tuple[str, ...] | None = None


Source = pl.DataFrame | StoredTable


def columns_of(source: Source) -> list[str]:
    """The source's columns (a stored table's without the partition column)."""
    return source.columns if isinstance(source, pl.DataFrame) else source.store.columns(source.table)


def sql_strings(values: Sequence[str]) -> str:
    """SQL string literals of ``values``, comma-separated (``NULL`` for none: ``IN (NULL)`` matches no row)."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values) or "NULL"


class SortedTables:
    """Sorted copies of sources in a scratch folder (removed by :meth:`close`), each made once."""

    def __init__(self, folder: Path | None = None):
        if folder is not None:
            Path(folder).mkdir(parents=True, exist_ok=True)
        self._scratch = tempfile.TemporaryDirectory(prefix="release-scratch-", dir=folder)
        self._made: dict[tuple, tuple[Source, pl.LazyFrame]] = {}  # the source is kept: its id stays its own

    def __enter__(self) -> SortedTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._made.clear()
        self._scratch.cleanup()

    def scan(
        self, source: Source, columns: Sequence[str], order_by: Sequence[str] = (), where: str | None = None
    ) -> pl.LazyFrame:
        """``columns`` of the source's rows (those meeting the SQL condition ``where``) sorted by ``order_by``
        (in the source's order when empty), as a lazy scan of a parquet file."""
        key = (id(source) if isinstance(source, pl.DataFrame) else source, tuple(columns), tuple(order_by), where)
        if key not in self._made:
            path = Path(self._scratch.name) / f"{len(self._made)}.parquet"
            conditions = [where] if where else []
            if isinstance(source, StoredTable) and source.partitions is not None:
                conditions.append(f"{PARTITION_COLUMN} IN ({sql_strings(source.partitions)})")
            sql = f"SELECT {', '.join(_quoted(c) for c in columns)} FROM {{table}}"
            sql += f" WHERE {' AND '.join(conditions)}" if conditions else ""
            sql += f" ORDER BY {', '.join(f'{_quoted(c)} NULLS FIRST' for c in order_by)}" if order_by else ""
            with self._connection(source) as (con, table):
                con.execute(
                    f"COPY ({sql.format(table=table)}) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
                )
            self._made[key] = (source, pl.scan_parquet(path))
        return self._made[key][1]

    @contextmanager
    def _connection(self, source: Source) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
        """A connection with ``SETTINGS`` (reset afterwards: the store's connection may be held open for the whole
        run) that spills to the store's temporary folder, or for a frame to the scratch folder."""
        if isinstance(source, StoredTable):
            with source.store.connect(settings=SETTINGS) as con:
                yield con, _quoted(source.table)
            return
        with duckdb.connect(config={**SETTINGS, "temp_directory": self._scratch.name}) as con:
            con.register("source", source.to_arrow())
            yield con, "source"


@cache
def process_sorted_tables() -> SortedTables:
    """The scratch of callers that pass none (tests, scripts): one per process, removed when it exits."""
    return SortedTables()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
