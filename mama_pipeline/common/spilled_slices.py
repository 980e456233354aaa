"""Slices of a step's output kept in scratch parquet files until the IO manager writes them.

A step whose slices are slow to make (a retriever searching) makes them all first, each written to a file as
it comes, and hands the IO manager a reader of the files: the store's write lock is held only while the rows
are copied, not while they are searched, and the step's memory grows with one slice.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path

import polars as pl


class SpilledSlices:
    """Frames of one schema filed under a group each, read back group by group (each group's frames in the order
    they came); the scratch folder is removed once they are read, or by :meth:`discard`, which a ``with`` block
    filling them calls when it fails."""

    def __init__(self, scratch: Path | None, empty: pl.DataFrame):
        if scratch is not None:  # None: the system's temporary folder
            scratch.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix="slices-", dir=scratch))
        self.empty = empty
        self.files: dict[Hashable, list[Path]] = {}

    def __enter__(self) -> SpilledSlices:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.discard()

    def add(self, frame: pl.DataFrame, group: Hashable = "") -> None:
        path = self.folder / f"{sum(map(len, self.files.values())):06d}.parquet"
        frame.write_parquet(path)
        self.files.setdefault(group, []).append(path)

    def read(self, groups: Sequence[Hashable] | None = None) -> Iterator[pl.DataFrame]:
        """The frames of ``groups`` (default: every group, in the order they first came); at least one frame (the
        empty one when none was added), so that a write always has its schema."""
        try:
            paths = self._paths(groups)
            if not paths:
                yield self.empty
            for path in paths:
                yield pl.read_parquet(path)
        finally:
            self.discard()

    def scan(self, groups: Sequence[Hashable] | None = None) -> pl.LazyFrame:
        """The frames of ``groups`` (default: every group) as one lazy frame, in :meth:`read`'s order; the files
        stay, to be scanned again (a filter reads only the rows it keeps into memory)."""
        paths = self._paths(groups)
        return pl.scan_parquet(paths) if paths else self.empty.lazy()

    def _paths(self, groups: Sequence[Hashable] | None) -> list[Path]:
        return [p for g in (self.files if groups is None else groups) for p in self.files.get(g, [])]

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
