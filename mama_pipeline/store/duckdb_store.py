"""One DuckDB file shared by every Dagster step process.

DuckDB allows a single writing process per file. Every connection here is
short-lived and taken under an ``fcntl`` readers-writer lock on ``<db>.lock``:
writers hold it exclusively for one transaction, readers share it and open the
file read-only. Steps of Dagster's multiprocess executor therefore interleave
their transactions instead of failing on DuckDB's file lock, and a step that
dies mid-write leaves only its uncommitted transaction behind. A read in a thread
that is inside a write of the same file (e.g. a sliced write's slices reading
their inputs) takes a cursor on the write connection instead of the lock: a
DuckDB cursor is its own connection, so the read sees the committed data.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

from mama_pipeline.common.content_version import record_written
from mama_pipeline.common.sql_contracts import contract_files

PARTITION_COLUMN = "_partition"
READ_BATCH_ROWS = 100_000
BOUNDED = {"memory_limit": "512MB"}  # DuckDB settings of a query whose memory must not grow with its rows (it spills)
KEY_LINE = re.compile(r"^-- key: *(.+?) *$", re.MULTILINE)  # a DDL's "-- key: a, b": columns no two rows share
# measurements of the run, not results: no part of a table's content digest (an asset recording them would re-run
# its readers): the plan's timings, from recorded latencies, and whether a label was asked in this run or reused
REUSED = ("reused",)
MEASURED = {
    "llm_plan": ("latency_s", "expected_s", "bound_s"),
    **dict.fromkeys(
        ("judged_labels", "judgments", "reference_judgments", "audit_judgments", "multipassage_labels"), REUSED
    ),
}
_held: dict[Path, duckdb.DuckDBPyConnection] = {}  # database file -> the connection hold_open() keeps
_writing: dict[tuple[Path, int], duckdb.DuckDBPyConnection] = {}  # (database file, thread id) -> its write connection


@contextmanager
def _reads_through(path: Path, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Serve this thread's reads of ``path`` (resolved) from ``con`` while the context lasts (an outer one stays)."""
    key = (path, threading.get_ident())
    if key in _writing:
        yield
        return
    _writing[key] = con
    try:
        yield
    finally:
        del _writing[key]


@contextmanager
def hold_open(path: str | os.PathLike[str]) -> Iterator[None]:
    """Keep the database open in this process while the context lasts: every :meth:`Store.connect` then
    takes a cursor on it instead of opening the file (~30 ms each, some 470 times in a no-op run of the
    sample). Only for runs whose process is the file's one user (in-process runs): another process
    cannot open the file meanwhile."""
    key = Path(path).resolve()
    if key in _held:
        yield
        return
    store = Store(key)
    store.path.parent.mkdir(parents=True, exist_ok=True)
    with store._locked(exclusive=True):
        _held[key] = duckdb.connect(str(key))
    try:
        yield
    finally:
        with store._locked(exclusive=True):
            _held.pop(key).close()


def ddl_path(table: str) -> Path | None:
    """``sql/tables/<area>/<table>.sql``; None for a table without DDL."""
    return contract_files().get(table)


def table_ddl(table: str) -> str:
    """The DDL of a table that must have one; a KeyError names a table without."""
    ddl = ddl_path(table)
    if ddl is None:
        raise KeyError(f"table {table!r} has no DDL under sql/tables/<area>/")
    return ddl.read_text()


class DuplicateKeyError(ValueError):
    """Rows of a write share the key their table's DDL declares; the write was rolled back."""


def declared_key(table: str) -> list[str]:
    """The key columns of a ``-- key: a, b`` line in the table's DDL; none without DDL or line.

    Such a key stands for a PRIMARY KEY the table cannot afford: DuckDB holds a key's index of every row a
    transaction inserts in memory until it commits and, under a memory limit, fails rather than spill. The
    store checks it once a write's rows are in, in the write's transaction (:func:`check_key`); the DDL makes
    its columns NOT NULL."""
    ddl = ddl_path(table)
    line = KEY_LINE.search(ddl.read_text()) if ddl is not None else None
    return [c.strip() for c in line.group(1).split(",")] if line else []


def drop_primary_key(con: duckdb.DuckDBPyConnection, table: str) -> int | None:
    """Rebuild ``table`` from its DDL, which has no PRIMARY KEY, where an older DDL gave it one; returns the rows
    kept, or None where the table has none (nothing done). DuckDB rewrites a key's whole index at every checkpoint,
    and a short-lived connection checkpoints as it closes: each small write to a keyed table of millions of rows
    cost seconds. The rebuild is said on the ``mama_pipeline.store`` logger."""
    keyed = con.execute(
        "SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'", [table]
    ).fetchone()[0]
    if not keyed:
        return None
    con.execute(f'ALTER TABLE "{table}" RENAME TO "{table}__keyed"')
    con.execute(table_ddl(table))
    con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM "{table}__keyed"')
    con.execute(f'DROP TABLE "{table}__keyed"')
    rows = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    logging.getLogger("mama_pipeline.store").warning(
        "%s: rebuilt without its PRIMARY KEY index (%d rows kept), once: its writes keep the key themselves",
        table,
        rows,
    )
    return rows


class Store:
    """Locked access to the pipeline's DuckDB database file. Reads inside a write of this thread (e.g. those of the
    slices of a :meth:`write_table`) go through the write connection."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    @contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    @contextmanager
    def connect(
        self, write: bool = False, settings: Mapping[str, object] | None = None
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one unit of work; writes run in one transaction. ``settings`` (DuckDB's, e.g.
        :data:`BOUNDED`) hold for the unit and are reset after it: a held connection serves the whole run. A read
        while this thread is inside a write of the same file is a cursor on the write connection, without the lock
        (taking it would deadlock), under the write's settings."""
        writer = _writing.get((self.path.resolve(), threading.get_ident())) if _writing and not write else None
        if writer is not None:
            con = writer.cursor()  # its own connection: the committed data, not the write's
            try:
                yield con
            finally:
                con.close()
            return
        if not write and not self.path.exists():
            write = True  # first touch creates the file
        held = _held.get(self.path.resolve()) if _held else None
        with self._locked(exclusive=write):
            con = held.cursor() if held is not None else duckdb.connect(str(self.path), read_only=not write)
            for name, value in (settings or {}).items():
                con.execute(f"SET {name} = '{value}'")
            try:
                if write:
                    con.execute("BEGIN TRANSACTION")
                    try:
                        with _reads_through(self.path.resolve(), con):
                            yield con
                    except BaseException:
                        con.execute("ROLLBACK")
                        raise
                    con.execute("COMMIT")
                else:
                    yield con
            finally:
                for name in settings or {}:
                    con.execute(f"RESET {name}")
                con.close()

    def ensure_tables(self, *tables: str) -> None:
        """Create tables from their DDL when missing."""
        with self.connect(write=True) as con:
            for table in tables:
                con.execute(table_ddl(table))

    def table_exists(self, table: str) -> bool:
        with self.connect() as con:
            return _exists(con, table)

    def columns(self, table: str) -> list[str]:
        """A table's columns in order, without the partition column; a KeyError names a table never materialised."""
        with self.connect() as con:
            rows = con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table],
            ).fetchall()
        if not rows:
            raise KeyError(f"table {table!r} is not in {self.path}; materialise its asset first")
        return [r[0] for r in rows if r[0] != PARTITION_COLUMN]

    def write_table(
        self,
        table: str,
        df: pl.DataFrame | Iterable[pl.DataFrame],
        partition: str | None = None,
        step_context: object = None,
    ) -> int:
        """Replace a table, or one partition of it, atomically; return the rows written. Its content digest goes
        into the data version of the asset whose step writes it (``content_version.record_written``; ``step_context``:
        that step, when not the asset computing in this thread, e.g. in the IO manager).

        ``df`` may be slices (at least one, of one schema): each is inserted by its own statement, in order, in the
        one transaction, so memory grows with a slice (DuckDB held every slice's arrow rows until the end of one
        statement streaming them all); a slice may read the store (the committed data, through the write
        connection). When the table has DDL (``sql/tables/<area>/<table>.sql``) it is created from it and rows are
        inserted by column name, so the DDL is the enforced contract; a key it declares (:func:`declared_key`) is
        checked once every row is in, the write under :data:`BOUNDED` (a duplicate raises
        :class:`DuplicateKeyError` and nothing is written).
        """
        slices = iter([df]) if isinstance(df, pl.DataFrame) else iter(df)
        first = next(slices, None)  # pulled before the write opens
        if first is None:
            raise ValueError(f"write_table {table}: no slices to write")
        rows = 0
        key = declared_key(table)
        with self.connect(write=True, settings=BOUNDED if key else None) as con:
            into = _replace(con, table, partition)
            for part in itertools.chain([first], slices):
                rows += part.height
                if partition is not None:
                    part = part.with_columns(pl.lit(partition).alias(PARTITION_COLUMN))
                if into:
                    _from_arrow(con, f'INSERT INTO "{table}" BY NAME SELECT * FROM _incoming', part.to_arrow())
                else:  # no DDL: the first slice makes the table
                    _from_arrow(con, f'CREATE OR REPLACE TABLE "{table}" AS SELECT * FROM _incoming', part.to_arrow())
                    into = True
            check_key(con, table, key)
            record_written(_written_name(table, partition), lambda: content_digest(con, table, partition), step_context)
        return rows

    def read_table(
        self,
        table: str,
        partitions: list[str] | None = None,
        columns: Sequence[str] | None = None,
        where: Mapping[str, Sequence] | None = None,
    ) -> pl.DataFrame:
        """Read a table (optionally some partitions, some columns, the rows whose ``where`` column holds one of
        the given values), without the partition column; rows in the table's order."""
        selected = ", ".join(f'"{c}"' for c in columns) if columns is not None else "*"
        wanted = {**(where or {}), **({PARTITION_COLUMN: partitions} if partitions is not None else {})}
        conditions = [f'"{column}" IN (SELECT unnest(?))' for column in wanted]
        params = [list(values) for values in wanted.values()]
        sql = f'SELECT {selected} FROM "{table}"' + (f" WHERE {' AND '.join(conditions)}" if conditions else "")
        if columns is not None or where is not None:
            sql += " ORDER BY rowid"  # a filtered parallel scan may return rows out of order
        with self.connect() as con:
            if not _exists(con, table):
                raise KeyError(f"table {table!r} is not in {self.path}; materialise its asset first")
            df = _polars(con.execute(sql, params))
        if PARTITION_COLUMN in df.columns:
            df = df.drop(PARTITION_COLUMN)
        return df

    def query(self, sql: str, params: list | None = None) -> pl.DataFrame:
        with self.connect() as con:
            return _polars(con.execute(sql, params or []))

    def replace_from_query(self, table: str, select_sql: str, params: list | None = None) -> int:
        """Replace a table with the rows of ``select_sql`` (a query over this file's tables), in one transaction:
        the rows never pass through Python. Like :meth:`write_table`, a table with DDL is
        created from it and filled by column name (a key it declares checked); rows are stored in the query's
        order, DuckDB's memory bounded (:data:`BOUNDED`); its content digest recorded as :meth:`write_table`'s.
        Returns the rows written."""
        with self.connect(write=True, settings=BOUNDED) as con:
            ddl = ddl_path(table)
            if ddl is None:
                con.execute(f'CREATE OR REPLACE TABLE "{table}" AS {select_sql}', params or [])
                rows = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            else:
                con.execute(f'DROP TABLE IF EXISTS "{table}"')
                con.execute(ddl.read_text())
                rows = con.execute(f'INSERT INTO "{table}" BY NAME {select_sql}', params or []).fetchone()[0]
                check_key(con, table, declared_key(table))
            record_written(_written_name(table, None), lambda: content_digest(con, table))
            return rows


def _written_name(table: str, partition: str | None) -> str:
    return f"table:{table}" if partition is None else f"table:{table}[{partition}]"


def content_digest(
    con: duckdb.DuckDBPyConnection, table: str, partition: str | None = None, where: Mapping[str, object] | None = None
) -> str:
    """A table's content (or a partition's, or the rows whose ``where`` columns hold the given values): its columns
    and types, its row count and the sum of its rows' hashes, in SQL. The same rows in any order give the same
    digest; :data:`MEASURED` columns and the partition column are left out."""
    skip = [*MEASURED.get(table, ()), PARTITION_COLUMN]
    types = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    kept = [(c, t) for c, t in types if c not in skip]
    wanted = {**(where or {}), **({PARTITION_COLUMN: partition} if partition is not None else {})}
    cond = " AND ".join(f'"{c}" = ?' for c in wanted)
    cols = ", ".join(f'"{c}"' for c, _ in kept)
    rows, total = con.execute(
        f'SELECT count(*), sum(hash(r)::HUGEINT) FROM (SELECT {cols} FROM "{table}"'
        + (f" WHERE {cond}" if cond else "")
        + ") r",
        list(wanted.values()),
    ).fetchone()
    return f"{kept}:{rows}:{total or 0}"


def _polars(result: duckdb.DuckDBPyRelation | duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """A query result as polars, converted batch by batch: the whole result is never held as arrow too."""
    reader = result.to_arrow_reader(READ_BATCH_ROWS)
    frames = [pl.from_arrow(batch) for batch in reader]
    return pl.concat(frames) if frames else pl.from_arrow(reader.schema.empty_table())


def _exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether a table or view named ``table`` exists: what ``information_schema.tables`` lists (every table, and
    the views not internal to DuckDB), read from the catalog functions directly (that view costs twice as much)."""
    return bool(
        con.execute(
            "SELECT (SELECT count(*) FROM duckdb_tables() WHERE table_name = $1) "
            "+ (SELECT count(*) FROM duckdb_views() WHERE NOT internal AND view_name = $1)",
            [table],
        ).fetchone()[0]
    )


def _replace(con: duckdb.DuckDBPyConnection, table: str, partition: str | None) -> bool:
    """Clear what a write replaces (the table, or its partition), creating the table from its DDL when missing;
    False when the table is still to create from the written rows (no DDL, and no partitioned table to add to)."""
    ddl = ddl_path(table)
    if ddl is not None:
        if partition is None:
            con.execute(f'DROP TABLE IF EXISTS "{table}"')
        con.execute(ddl.read_text())
        if partition is not None:
            _add_new_columns(con, table, ddl.read_text())
            # rows of no partition were written before the table was partitioned: the partitions' writes replace them
            con.execute(
                f'DELETE FROM "{table}" WHERE {PARTITION_COLUMN} = ? OR {PARTITION_COLUMN} IS NULL', [partition]
            )
        return True
    if partition is None or not _exists(con, table):
        return False
    con.execute(f'DELETE FROM "{table}" WHERE {PARTITION_COLUMN} = ?', [partition])
    return True


def check_key(con: duckdb.DuckDBPyConnection, table: str, key: Sequence[str]) -> None:
    """Raise :class:`DuplicateKeyError` naming a ``key`` that two rows of ``table`` share (nothing without a key).
    The candidates are the rows whose hash of the key another row has; they are grouped again on the key itself,
    so a hash collision is no duplicate. Both aggregations spill under :data:`BOUNDED`, where an index of every
    key would not."""
    if not key:
        return
    cols = ", ".join(f'"{c}"' for c in key)
    shared = con.execute(
        f'SELECT {cols} FROM "{table}" WHERE hash({cols}) IN '
        f'(SELECT hash({cols}) FROM "{table}" GROUP BY ALL HAVING count(*) > 1) '
        "GROUP BY ALL HAVING count(*) > 1 LIMIT 1"
    ).fetchone()
    if shared is not None:
        named = ", ".join(f"{c} = {v!r}" for c, v in zip(key, shared, strict=True))
        raise DuplicateKeyError(
            f"table {table!r}: more than one row with key ({', '.join(key)}), e.g. {named}; nothing written"
        )


def _from_arrow(con: duckdb.DuckDBPyConnection, sql: str, incoming) -> None:
    """Run ``sql`` reading the arrow rows ``incoming`` as ``_incoming``. DuckDB finds them by this frame's variable
    name (its replacement scan), not through ``register``: a registered view, even unregistered, holds its rows
    until the transaction ends (the dropped catalog entry stays for the transaction), every slice of a write."""
    _incoming = incoming  # noqa: F841 (read by name by DuckDB)
    con.execute(sql)


def _add_new_columns(con: duckdb.DuckDBPyConnection, table: str, ddl: str) -> None:
    """Add the DDL's columns that a partitioned table created by an older DDL lacks (nullable; old rows NULL)."""
    with duckdb.connect() as scratch:
        scratch.execute(ddl)
        wanted = scratch.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
    have = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()
    }
    for name, dtype in wanted:
        if name not in have:
            con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {dtype}')
