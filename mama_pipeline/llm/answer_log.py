"""The LLM answer cache in DuckDB, and the append-only log that makes an answer durable before it is in it.

A client run appends the cache rows of its new answers to a file of its own under
``<db>.answers/`` (one JSON object a line, the cache row exactly: no key or header
is ever in it), flushed and fsync'd every fraction of a second: a cheap append whose
cost does not grow with the cache. The rows are folded into ``llm_responses`` in
batches (one DuckDB transaction, the last answer of a key wins), and a folded file is
deleted. Its process holds an ``flock`` on the file while it lives, so a file that
nobody holds belongs to a killed process: :func:`recover` folds it before the next run
looks anything up, so what a killed process got is not asked again. A torn last line
(the kill came mid-write) is skipped and reported, never folded.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import drop_primary_key, table_ddl
from mama_pipeline.store.table_schema import table_schema

CACHE_TABLE = "llm_responses"
FAILURE_TABLE = "llm_failures"
CACHE_COLUMNS = table_schema(CACHE_TABLE)
FAILURE_COLUMNS = table_schema(FAILURE_TABLE)
_NOT_NULL = {
    "cache_key",
    "stage",
    "endpoint",
    "model",
    "template_id",
    "template_hash",
    "schema_hash",
    "status",
    "attempts",
    "created_at",
}  # as in llm_responses's DDL (sql/tables/llm/llm_responses.sql)
_JSON_TYPES = {pl.String: str, pl.Int64: int, pl.Int32: int, pl.Float64: (int, float)}
LOG_SUFFIX = ".answers"  # the log folder sits beside the database file: mama.duckdb.answers/
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"  # created_at in a log line (UTC, as the cache stores it), written by Python
TIME_PARSE = "%Y-%m-%d %H:%M:%S%.f"  # and read by polars (chrono)


def log_dir(store: Store) -> Path:
    return store.path.with_name(store.path.name + LOG_SUFFIX)


def now_utc() -> str:
    """The current UTC time as a log line's (and a failure's) ``created_at``."""
    return dt.datetime.now(dt.UTC).strftime(TIME_FORMAT)


class LogFile:
    """One locked log file of a live client run and the rows written to it."""

    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        while True:  # a recoverer may delete the file between its creation and the lock: then make another
            started = dt.datetime.now(dt.UTC)  # names sort oldest first
            self.path = directory / f"{started:%Y%m%dT%H%M%S%f}-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            if os.fstat(self.fd).st_nlink:
                break
            os.close(self.fd)
        _fsync_dir(directory)  # the file's name survives a crash of the machine, not only of the process
        self.rows: list[dict[str, Any]] = []

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Append rows and return once they are on disk."""
        data = memoryview("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode())
        while data:
            data = data[os.write(self.fd, data) :]
        os.fsync(self.fd)
        self.rows += rows

    def discard(self) -> None:
        """Delete the file once its rows are in the cache (still locked while it is deleted)."""
        os.unlink(self.path)
        os.close(self.fd)

    def release(self) -> None:
        """Give the file up unfolded (its fold failed): the next run's :func:`recover` folds it."""
        os.close(self.fd)


class AnswerLog:
    """The log of one client run: rows go to the open file; :meth:`rotate` hands that file over for folding."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._file: LogFile | None = None

    def append(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            if self._file is None:
                self._file = LogFile(self.directory)
            self._file.write(rows)

    def rotate(self) -> LogFile | None:
        """The file written so far (None if nothing was); the next rows go to a new file."""
        file, self._file = self._file, None
        return file


def fold(store: Store, rows: list[dict[str, Any]], failures: Sequence[tuple] = ()) -> None:
    """Write answer rows (log lines; the last of each key wins) and transport failures in one transaction."""
    frames = {}
    if rows:
        frames[CACHE_TABLE] = (
            pl.DataFrame(rows, schema={**CACHE_COLUMNS, "created_at": pl.String}, orient="row")
            .unique("cache_key", keep="last", maintain_order=True)
            .with_columns(_time("created_at"))
        )
    if failures:
        frames[FAILURE_TABLE] = pl.DataFrame(
            list(failures), schema={**FAILURE_COLUMNS, "created_at": pl.String}, orient="row"
        ).with_columns(_time("created_at"))
    if not frames:
        return
    with store.connect(write=True) as con:
        ensure_cache_tables(con)  # a recoverer may come first
        for table, frame in frames.items():
            con.register("_rows", frame.to_arrow())
            if table == CACHE_TABLE:  # the last answer of a key replaces its row: the key stays unique
                con.execute(f"DELETE FROM {table} WHERE cache_key IN (SELECT cache_key FROM _rows)")
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
            con.unregister("_rows")


def ensure_cache_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the cache's tables where missing; a cache built with a PRIMARY KEY is rebuilt without it, once."""
    con.execute(table_ddl(CACHE_TABLE))
    con.execute(table_ddl(FAILURE_TABLE))
    drop_primary_key(con, CACHE_TABLE)


def read_rows(data: bytes, path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of a log file's bytes, and a note for each line skipped (torn by a kill, or not a cache row)."""
    lines = data.split(b"\n")
    rows, notes = [], []
    for number, line in enumerate(lines, 1):
        if number == len(lines):  # after the last newline: empty, or a line the kill cut short
            if line:
                notes.append(f"{path}:{number}: torn last line ({len(line)} bytes) skipped")
            break
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not _is_cache_row(row):
            notes.append(f"{path}:{number}: not a cache row, skipped")
            continue
        rows.append(row)
    return rows, notes


def _is_cache_row(row: Any) -> bool:
    """A JSON value with the cache's columns, each of its type, and a value in each NOT NULL column."""
    if not isinstance(row, dict) or set(row) != set(CACHE_COLUMNS):
        return False
    for name, dtype in CACHE_COLUMNS.items():
        value = row[name]
        if value is None:
            if name in _NOT_NULL:
                return False
        elif name == "created_at":
            try:
                dt.datetime.strptime(value, TIME_FORMAT)
            except (TypeError, ValueError):
                return False
        elif isinstance(value, bool) or not isinstance(value, _JSON_TYPES[dtype]):
            return False
    return True


def recover(store: Store) -> list[str]:
    """Fold the log files of killed processes into the cache and delete them; returns what was done, a line each.

    Files whose process lives (it holds the lock) are left alone; so are files another
    recoverer got first. Safe to run from any number of processes at once.
    """
    directory = log_dir(store)
    if not directory.is_dir():
        return []
    held: list[tuple[Path, int]] = []
    rows: list[dict[str, Any]] = []
    report: list[str] = []
    try:
        for path in sorted(directory.glob("*.jsonl")):  # names start with their creation time: oldest first
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:  # folded meanwhile by its owner or another recoverer
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its process lives
                os.close(fd)
                continue
            if not os.fstat(fd).st_nlink:  # another recoverer folded and deleted it before we got the lock
                os.close(fd)
                continue
            held.append((path, fd))
            with os.fdopen(os.dup(fd), "rb") as fh:
                got, notes = read_rows(fh.read(), path)
            rows += got
            report += notes
            report.append(f"{len(got)} answers of a killed run recovered from {path.name}")
        fold(store, rows)
        for path, _ in held:
            os.unlink(path)
    finally:
        for _, fd in held:
            os.close(fd)
    return report


def _time(column: str) -> pl.Expr:
    return pl.col(column).str.to_datetime(TIME_PARSE, time_unit="us")


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
