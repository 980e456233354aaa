"""Public and held-out figures side by side: per group, each part's mean, the gap and an unpaired test.

The parts are disjoint item sets, so no paired test applies: the p value is scipy's two-sided permutation test
of the difference of the two parts' means, items permuted between the parts
(``permutation_type="independent"``), seeded. A group with fewer than ``MIN_ITEMS`` items in a part gets no
figures for that part's comparison, with the reason; with no held-out part (share 0) there is nothing to compare.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from mama_pipeline.common.held_out import HELD_OUT, PUBLIC, HeldOutRule

TEST = "two-sided permutation test of the difference (independent samples, scipy)"
MIN_ITEMS = 2  # per part: fewer gives no gap and no test
GAP_SCHEMA = {
    "n_public": pl.Int64, "n_held_out": pl.Int64, "mean_public": pl.Float64, "mean_held_out": pl.Float64,
    "gap": pl.Float64, "p_permutation": pl.Float64, "test": pl.String, "note": pl.String,
}


def _gap(public: np.ndarray, held: np.ndarray, resamples: int, seed: int) -> dict:
    from scipy import stats

    row = {"n_public": int(public.size), "n_held_out": int(held.size), "mean_public": None, "mean_held_out": None,
           "gap": None, "p_permutation": None, "test": None, "note": None}
    if not held.size:
        return {**row, "note": "no held-out item (release.held_out.share is 0, or the rule held none of these out)"}
    row["mean_public"] = float(np.mean(public)) if public.size else None
    row["mean_held_out"] = float(np.mean(held))
    if public.size < MIN_ITEMS or held.size < MIN_ITEMS:
        return {**row, "note": f"fewer than {MIN_ITEMS} items in a part: no gap or test"}

    def diff(x, y, axis=-1):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    res = stats.permutation_test((public, held), diff, permutation_type="independent", vectorized=True,
                                 n_resamples=resamples, alternative="two-sided", rng=np.random.default_rng(seed))
    return {**row, "gap": row["mean_public"] - row["mean_held_out"], "p_permutation": float(res.pvalue), "test": TEST}


def part_gaps(values: pl.DataFrame, by: Sequence[str], id_column: str, rule: HeldOutRule, resamples: int, seed: int,
              key: pl.Expr | None = None) -> pl.DataFrame:
    """One row per group of ``by``: items and mean in each part (by the rule on ``key``, default the id
    column), gap = public - held out, and the permutation p value. ``values`` has one numeric ``value`` per
    (group, item)."""
    ids = values.select((key if key is not None else pl.col(id_column)).alias("_key")).to_series()
    parts = values.with_columns(rule.part_of(ids).alias("_part"))
    rows = []
    for group, block in sorted(parts.group_by(list(by)), key=lambda kv: kv[0]):
        public = block.filter(pl.col("_part") == PUBLIC)["value"].to_numpy().astype(float)
        held = block.filter(pl.col("_part") == HELD_OUT)["value"].to_numpy().astype(float)
        rows.append({**dict(zip(by, group)), **_gap(public, held, resamples, seed)})
    schema = {**{c: values.schema[c] for c in by}, **GAP_SCHEMA}
    return pl.DataFrame(rows, schema=schema)
