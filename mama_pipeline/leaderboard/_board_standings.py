"""Standings of one track and measure: which entries the data place below the best.

The test is a step-down range test by permutation (scipy's ``permutation_test``, ``permutation_type="samples"``):
the entries' values are summed per unit (a unit is a query, or the group the held-out rule hashes: a robustness
variant's parent, a HealthBench item's prompt) and, under the null that the entries are exchangeable within
each unit, every unit's (sum, count) pairs are shuffled among the entries (a missing value moves with its label,
as a count of 0). The statistic is the range of the entries' means (highest - lowest). Step 1 tests every entry
compared; when its p < alpha the entry with the lowest mean is *below best*, it leaves, and the range of the
rest is tested again, each p the largest so far (step-down). The first step whose p >= alpha leaves the rest
*tied with best*, or *not separable at this n* where that step's smallest attainable p is itself >= alpha.

Why not pairwise tests against the best with Holm over the m = entries - 1 pairs: the best is chosen by the
data, so the worst entry's test is one of the range and rejects a true global null far more often than alpha
(simulated, 300 queries: 12% with 8 entries, 24% with 20). The range's permutation distribution accounts for the
choice; the whole null is rejected at most alpha of the time, whatever the number of entries.

Smallest attainable p of a step with k entries on U units: max(1 / (R + 1), (k!)^(1 - U)) with R resamples
(scipy enumerates every permutation exactly when (k!)^U <= R: the k! relabellings of every unit alike give the
observed range); R is at least 10 / alpha - 1, so resampling alone never keeps a step's p above alpha / 10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from mama_pipeline.evaluation import ELEMENTS_PER_CALL

BEST, TIED, BELOW, NOT_COMPARED, NOT_SEPARABLE = (
    "best",
    "tied with best",
    "below best",
    "not compared with best",
    "not separable at this n",
)
MIN_SHARED = 2  # units an entry must share with the best to be in the test


@dataclass(frozen=True)
class Standing:
    standing: str
    p: float | None  # step-down p of the step that placed the entry (None: best, not compared)
    n_shared: int | None  # units shared with the best


@dataclass(frozen=True)
class BoardTest:
    entries: int  # entries in the test (the best included)
    units: int  # units with a value of some entry in the test
    resamples: int
    p_floor: float | None  # smallest p the first step can attain (None: fewer than two entries in the test)
    separable: bool  # p_floor < alpha: the data could place some entry below the best


def resamples_for(configured: int, alpha: float) -> int:
    """The standing test's resamples: the configured count, at least 10 / alpha - 1 (smallest p <= alpha / 10)."""
    return max(configured, math.ceil(10 / alpha) - 1)


def p_floor(entries: int, units: int, resamples: int) -> float:
    """Smallest p a step with ``entries`` entries on ``units`` units can attain: max(1/(R+1), (k!)^(1-U))."""
    exact = math.exp((1 - units) * math.lgamma(entries + 1)) if units >= 1 else 1.0
    return max(1.0 / (resamples + 1), exact)


def _range_of_means(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    """Highest minus lowest entry mean; each sample holds one entry's per-unit sum + 1j * count."""
    return _range_of_stacked(np.stack(samples), axis)


def _range_of_stacked(stacked: np.ndarray, axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        means = stacked.real.sum(axis=axis) / stacked.imag.sum(axis=axis)
    return np.nanmax(means, axis=0) - np.nanmin(means, axis=0)


def range_p(matrix: np.ndarray, resamples: int, seed: int) -> float:
    """Permutation p of the range of means (rows: entries; columns: units; sum + 1j * count, 0 for missing).

    Scipy's ``permutation_test`` (``permutation_type="samples"``, ``alternative="greater"``) on the same seed and
    batch, the same p bit for bit: its random relabellings drawn as it draws them (``rng.permuted`` of each
    unit's entry indices, a batch at a time), but gathered for every unit at once, not a unit at a time. The
    exact test (every relabelling enumerated: tiny boards) and fewer than two units go to scipy itself.
    """
    from scipy import stats

    entries, units = matrix.shape
    batch = max(1, ELEMENTS_PER_CALL // matrix.size)
    rng = np.random.default_rng(seed)
    if units < 2 or resamples >= math.factorial(entries) ** units:
        res = stats.permutation_test(
            tuple(matrix),
            _range_of_means,
            permutation_type="samples",
            vectorized=True,
            n_resamples=resamples,
            alternative="greater",
            batch=batch,
            rng=rng,
        )
        return float(np.real(res.pvalue))
    observed = _range_of_means(*matrix)
    batch = min(batch, resamples)
    # (resample, unit, position): the entry's index in the units' (unit, entry) order, permuted as scipy permutes
    # the entry indices (the draws do not depend on the values shuffled)
    indices = np.tile(np.arange(units)[:, None] * entries + np.arange(entries), (batch, 1, 1))
    by_unit = matrix.T.copy()  # (unit, entry)
    totals = by_unit.real.ravel()
    counts = None if np.all(by_unit.imag == by_unit.imag[:, :1]) else by_unit.imag.ravel()
    alike = by_unit.imag[:, 0].sum()  # every entry's count when each unit's counts are alike: whole numbers, exact
    nulls = []
    for start in range(0, resamples, batch):
        drawn = rng.permuted(indices, axis=-1)[: min(batch, resamples - start)]
        # summed over the units one after another, as scipy's stacked (entry, resample, unit) sample is summed
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.take(totals, drawn).sum(axis=1) / (
                alike if counts is None else np.take(counts, drawn).sum(axis=1)
            )
        nulls.append(np.nanmax(means, axis=1) - np.nanmin(means, axis=1))
    null = np.concatenate(nulls)
    gamma = abs(np.finfo(float).eps * 100 * observed)
    count = np.asarray(np.count_nonzero(null >= observed - gamma) + 1, dtype=matrix.dtype)
    return float(np.real(count / (resamples + 1)))  # divided in the data's (complex) dtype, as scipy divides


def unit_matrix(per_unit: pl.DataFrame, entries: list[str]) -> np.ndarray:
    """Rows = ``entries``, columns = units in sorted order; (total, count) as total + 1j * count."""
    units = sorted(per_unit["unit"].unique().to_list())
    col = {u: j for j, u in enumerate(units)}
    row = {e: i for i, e in enumerate(entries)}
    out = np.zeros((len(entries), len(units)), dtype=complex)
    for e, u, total, count in per_unit.select("entry_id", "unit", "total", "count").iter_rows():
        if e in row:
            out[row[e], col[u]] = complex(total, count)
    return out


def per_unit(values: pl.DataFrame, unit: pl.Expr | None = None) -> pl.DataFrame:
    """(entry_id, unit, total, count) of one measure's values (entry_id, query_id, value); ``unit`` maps the
    query id to its group (default: the query itself)."""
    key = (unit if unit is not None else pl.col("query_id")).alias("unit")
    return (
        values.with_columns(key)
        .group_by("entry_id", "unit")
        .agg(pl.col("value").sum().alias("total"), pl.len().alias("count"))
        .sort("entry_id", "unit")
    )


def standings(
    units: pl.DataFrame, means: dict[str, float], resamples: int, seed: int, alpha: float
) -> tuple[dict[str, Standing], BoardTest]:
    """Each entry's standing from its per-unit values (:func:`per_unit`) and its mean (the best: the highest
    mean, the first entry id among equals)."""
    order = sorted(means, key=lambda e: (-means[e], e))
    if not order:
        return {}, BoardTest(0, 0, resamples, None, False)
    best = order[0]
    mine = {e: set(units.filter(pl.col("entry_id") == e)["unit"].to_list()) for e in order}
    shared = {e: len(mine[e] & mine[best]) for e in order}
    out = {best: Standing(BEST, None, None)}
    tested = [best]
    for e in order[1:]:
        if shared[e] < MIN_SHARED:
            out[e] = Standing(NOT_COMPARED, None, shared[e])
        else:
            tested.append(e)
    matrix = unit_matrix(units.filter(pl.col("entry_id").is_in(tested)), tested)
    n_units = matrix.shape[1]
    floor = p_floor(len(tested), n_units, resamples) if len(tested) > 1 else None
    board = BoardTest(len(tested), n_units, resamples, floor, floor is not None and floor < alpha)
    p = 0.0
    while len(tested) > 1:
        p = max(p, range_p(matrix[: len(tested)], resamples, seed))
        worst = tested[-1]
        if p < alpha:
            out[worst] = Standing(BELOW, p, shared[worst])
            tested.pop()
            continue
        label = TIED if p_floor(len(tested), n_units, resamples) < alpha else NOT_SEPARABLE
        for e in tested[1:]:
            out[e] = Standing(label, p, shared[e])
        break
    return out, board
