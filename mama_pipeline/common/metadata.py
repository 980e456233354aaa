"""Helpers for Dagster materialisation metadata."""

from collections.abc import Mapping
from typing import Any

import dagster as dg
import polars as pl

from mama_pipeline.common.markdown import METADATA, Cells, frame_table

FAILURES_SHOWN = 20  # the most failed records a step lists in its log or metadata


def md_table(
    df: pl.DataFrame, limit: int | None = 50, cells: Cells = METADATA, empty: str | None = "(none)"
) -> dg.MetadataValue:
    """A small table as Markdown metadata: the first ``limit`` rows (None: all), cells written by ``cells``,
    ``empty`` for a frame without rows (None: just the header)."""
    return dg.MetadataValue.md(frame_table(df, cells, limit=limit, empty=empty))


def none_as_text(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` with each None written "none" (Dagster's metadata holds no None)."""
    return {k: ("none" if v is None else v) for k, v in meta.items()}
