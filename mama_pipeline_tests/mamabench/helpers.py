"""Shared helpers for the mamabench tests: fixture paths and loading pools from them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from mama_pipeline.common.settings_base import resolve_path
from mama_pipeline.mamabench._adapters import adapt_pool
from mama_pipeline.mamabench._pools import POOL_BY_NAME
from mama_pipeline.mamabench._sources import load_pool
from mama_pipeline.mamabench.settings import MamabenchSettings

PACKAGE = Path(__file__).resolve().parents[2] / "mama_pipeline"
SETTINGS = MamabenchSettings()


def resolve(path: str) -> Path:
    """Resolve like the bundled sample config does (against the package folder)."""
    return resolve_path(path, PACKAGE)


def raw(pool: str) -> pl.DataFrame:
    return load_pool(POOL_BY_NAME[pool], getattr(SETTINGS.sources, pool), resolve).rows


def adapted(pool: str) -> pl.DataFrame:
    return adapt_pool(pool, raw(pool), SETTINGS)


def status_counts(df: pl.DataFrame) -> dict[tuple[str, str | None], int]:
    return {(s, r): n for s, r, n in df.group_by("status", "reason").len().iter_rows()}
