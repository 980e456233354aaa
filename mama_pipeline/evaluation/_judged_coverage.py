"""Precision and recall at k need complete pools: flag them where the retriever's Judged@k falls below a bound.

A pair nobody judged (a retriever outside the pool, or adaptive judging's unjudged pairs) scores as not relevant,
which biases P@k and R@k downward; Judged@k (ir_measures) is the share of the top k that has a label. The bound is
``judging.min_judged_share``.
"""

from __future__ import annotations

import polars as pl

FLAGGED_FAMILIES = ("P", "R")
FLAG_SCHEMA = {"retriever": pl.String, "measure": pl.String, "k": pl.Int64, "judged_at_k": pl.Float64}


def incomplete_pool_flags(board: pl.DataFrame, bound: float) -> pl.DataFrame:
    """The precision and recall means (``tier`` all) of ``board`` whose retriever's Judged@k mean is under
    ``bound``: (retriever, measure label, k, judged_at_k); a measure with no Judged@k at its k is flagged with
    judged_at_k null (not measured)."""
    overall = board.filter(pl.col("tier") == "all")
    judged = overall.filter(pl.col("family") == "Judged").select("retriever", "k", judged_at_k="mean")
    flagged = (
        overall.filter(pl.col("family").is_in(FLAGGED_FAMILIES))
        .join(judged, on=["retriever", "k"], how="left")
        .filter(pl.col("judged_at_k").is_null() | (pl.col("judged_at_k") < bound))
    )
    return flagged.select("retriever", measure="label", k="k", judged_at_k="judged_at_k").cast(FLAG_SCHEMA)
