"""A slice at a time: the one slicer of the steps whose memory grows with a slice of queries, not with all."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import polars as pl

SLICE = 2000  # queries (or variants) a step holds at a time


def id_slices(ids: Sequence[str], size: int = SLICE) -> Iterator[list[str]]:
    """``ids`` in order, ``size`` at a time (none when there are no ids)."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def row_slices(frame: pl.DataFrame, size: int = SLICE) -> Iterator[pl.DataFrame]:
    """``frame``'s rows in order, ``size`` at a time (none when it has no rows)."""
    for start in range(0, frame.height, size):
        yield frame.slice(start, size)
