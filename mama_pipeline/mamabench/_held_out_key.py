"""The id mamabench's held-out rule hashes, shared by the release split and the systems' held-out gaps."""

from __future__ import annotations

import polars as pl

SHARED_PROMPT = r"^healthbench_[a-z_]+:"  # oss_eval, consensus and hard share prompt ids: one side per prompt


def split_key(column: str = "item_id") -> pl.Expr:
    """The id the held-out rule hashes: the item id, or ``healthbench:<prompt_id>`` for the HealthBench pools, so
    a conversation in several of them falls on one side."""
    return pl.col(column).str.replace(SHARED_PROMPT, "healthbench:")
