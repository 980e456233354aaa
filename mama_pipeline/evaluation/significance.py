"""Paired significance between every two retrievers, from per-query values.

For each measure and each pair (a, b), on the same queries: the paired bootstrap
confidence interval of mean(a - b) (scipy, seeded), a paired randomization test
(scipy permutation_test, sign flips within queries) and, for 0/1 measures such as
hit rate, the exact McNemar test on the discordant queries (statsmodels). Which
measures are 0/1 is inferred from the values unless the caller names them
(``binary_measures``): a graded measure whose sample happens to hold only 0 and 1
is not 0/1 by definition. Holm correction (statsmodels) runs across the pairs of
one measure and one test; a missing p is left out of its family and stays missing.
scipy and statsmodels load inside the functions: loading Dagster definitions stays fast.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Collection, Sequence

import numpy as np
import polars as pl

SIGNIFICANCE_SCHEMA = {
    "measure": pl.String,
    "retriever_a": pl.String,
    "retriever_b": pl.String,
    "n_queries": pl.Int64,
    "mean_a": pl.Float64,
    "mean_b": pl.Float64,
    "diff": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_randomization": pl.Float64,
    "p_randomization_holm": pl.Float64,
    "only_a": pl.Int64,
    "only_b": pl.Int64,
    "p_mcnemar": pl.Float64,
    "p_mcnemar_holm": pl.Float64,
}


class StatisticRefused(ValueError):
    """A statistic that cannot be computed on this input (n = 0, 1, degenerate values), with its reason."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


ELEMENTS_PER_CALL = 4_000_000  # values per vectorised resampling call (32 MB as float64)


def batch_for(n: int) -> int:
    """Resamples (and BCa jackknife samples) per vectorised scipy call for ``n`` queries or items: memory stays
    near ELEMENTS_PER_CALL values whatever ``n``; scipy's results do not depend on the batch."""
    return max(1, ELEMENTS_PER_CALL // max(n, 1))


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def compact(values: np.ndarray) -> np.ndarray:
    """Whole numbers of small size (0/1 hits, correctness) as int8, other values unchanged.

    scipy's BCa jackknife copies n x (n - 1) values, which at tens of thousands of items dominates the
    interval's cost: a byte each instead of eight. The statistics are the same bit for bit, since sums
    and differences of whole numbers are exact in float64 whatever the order of summation.
    """
    values = np.asarray(values)
    if values.size and values.dtype.kind == "f" and np.all(np.abs(values) <= 63) and np.all(values == np.trunc(values)):
        return values.astype(np.int8)
    return values


def paired_bootstrap_ci(
    a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int, confidence: float = 0.95
) -> tuple[float, float]:
    """BCa bootstrap interval of mean(a - b), resampling queries (pairs) together."""
    from scipy import stats

    a, b = compact(a), compact(b)
    d = a - b
    if np.all(d == d[0]):  # no spread: every resample gives the same difference
        return float(d[0]), float(d[0])
    res = stats.bootstrap(
        (a, b),
        _mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="BCa",
        batch=batch_for(d.size),
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def bootstrap_mean_ci(values: np.ndarray, n_resamples: int, seed: int, confidence: float = 0.95) -> tuple[float, float]:
    """BCa bootstrap interval of the mean of per-query values (queries resampled)."""
    from scipy import stats

    values = compact(np.asarray(values, dtype=float))
    if values.size == 0:
        return float("nan"), float("nan")
    if np.all(values == values[0]):  # no spread: the interval is the value itself
        return float(values[0]), float(values[0])
    res = stats.bootstrap(
        (values,),
        np.mean,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="BCa",
        batch=batch_for(values.size),
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def paired_randomization_p(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    """Two-sided p of mean(a - b) under random swaps of a and b within each query."""
    from scipy import stats

    if np.all(a == b):
        return 1.0
    res = stats.permutation_test(
        (compact(a), compact(b)),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        batch=batch_for(np.size(a)),
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


def exact_mcnemar(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """(queries hit only by a, only by b, exact McNemar p) for 0/1 per-query hits."""
    from statsmodels.stats.contingency_tables import mcnemar

    a1, b1 = a.astype(bool), b.astype(bool)
    table = [[int(np.sum(a1 & b1)), int(np.sum(a1 & ~b1))], [int(np.sum(~a1 & b1)), int(np.sum(~a1 & ~b1))]]
    return table[0][1], table[1][0], float(mcnemar(table, exact=True).pvalue)


def pairwise_significance(
    per_query: pl.DataFrame,
    measures: Sequence[str],
    retrievers: Sequence[str],
    *,
    n_resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
    binary_measures: Collection[str] | None = None,
) -> pl.DataFrame:
    """One row per (measure, pair of retrievers in the given order).

    Pairs are aligned by query id; a query missing for either retriever is an error
    (per-query tables from ``scoring.evaluate`` hold every benchmark query). The
    exact McNemar test runs on the measures in ``binary_measures`` (by default on
    every measure whose values are all 0 or 1).
    """
    rows = []
    for measure in measures:
        wide = (
            per_query.filter(pl.col("measure") == measure)
            .pivot(on="retriever", index="query_id", values="value")
            .sort("query_id")
        )
        missing = [r for r in retrievers if r not in wide.columns]
        if wide.height == 0 or missing:
            raise ValueError(f"no per-query values of {measure!r} for retrievers {missing or list(retrievers)}")
        if wide.select(pl.col(list(retrievers)).null_count()).sum_horizontal().item():
            raise ValueError(f"per-query values of {measure!r} do not cover the same queries for every retriever")
        values = {r: wide[r].to_numpy().astype(float) for r in retrievers}
        if binary_measures is None:
            binary = all(np.isin(v, (0.0, 1.0)).all() for v in values.values())
        else:
            binary = measure in binary_measures
            if binary and not all(np.isin(v, (0.0, 1.0)).all() for v in values.values()):
                raise ValueError(f"{measure!r} is named 0/1 but holds other values")
        block = []
        for ra, rb in itertools.combinations(retrievers, 2):
            a, b = values[ra], values[rb]
            low, high = paired_bootstrap_ci(a, b, n_resamples, seed, confidence)
            row = {
                "measure": measure,
                "retriever_a": ra,
                "retriever_b": rb,
                "n_queries": a.size,
                "mean_a": float(a.mean()),
                "mean_b": float(b.mean()),
                "diff": float((a - b).mean()),
                "ci_low": low,
                "ci_high": high,
                "p_randomization": paired_randomization_p(a, b, n_resamples, seed),
                "only_a": None,
                "only_b": None,
                "p_mcnemar": None,
            }
            if binary:
                row["only_a"], row["only_b"], row["p_mcnemar"] = exact_mcnemar(a, b)
            block.append(row)
        for test in ("randomization", "mcnemar"):
            adjusted = holm([r[f"p_{test}"] for r in block])
            for r, p in zip(block, adjusted):
                r[f"p_{test}_holm"] = p
        rows.extend(block)
    return pl.DataFrame(rows, schema=SIGNIFICANCE_SCHEMA)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p values (statsmodels multipletests); a missing p stays missing, the others are
    adjusted as the family they form.

    statsmodels' Holm branch ends in a full ``gc.collect()``, which takes ~0.5 s on the heap of a
    process that has loaded Dagster and the models (35 s of a 116 s no-op run of the sample); the
    heap is frozen around the call so that the collection only looks at objects made since.
    """
    from statsmodels.stats.multitest import multipletests

    present = [p for p in pvalues if p is not None]
    if not present:
        return [None] * len(pvalues)
    gc.freeze()
    try:
        adjusted = iter(float(p) for p in multipletests(present, method="holm")[1])
    finally:
        gc.unfreeze()
    return [None if p is None else next(adjusted) for p in pvalues]
