"""Intervals and paired tests of per-query (per-item) values, and their refusals.

For each measure and each pair (a, b), on the same queries: the paired BCa bootstrap
interval of mean(a - b), a paired randomization test (sign flips within queries) and,
for 0/1 measures such as hit rate, the exact McNemar test on the discordant queries
(statsmodels). The caller names the 0/1 measures (``binary_measures``; a retrieval
measure's from ``scoreboard_measures.zero_one_measures``), never inferred from the values:
a graded measure whose sample happens to hold only 0 and 1 is not 0/1 by definition. Holm correction (statsmodels) runs across the pairs of
one measure and one test; a missing p is left out of its family and stays missing.

The BCa interval of a mean and the sign-flip test are computed here in O(n) per
resample (leave-one-out means as (sum - x_i)/(n - 1); sign flips as one array
operation), drawing the resamples and signs exactly as scipy 1.17's ``bootstrap`` and
``permutation_test`` do from the same generator: mama_pipeline_tests/evaluation/
test_significance_fast.py shows both equal scipy to 1e-12. The figures from a seed
(the boards' and scoreboards') resample the same rows for every entry, measure and pair
of one size: those draws are made once and kept (up to KEPT_DRAWS values in all), and the
figures asked for together (``paired_bootstrap_cis``, ``paired_randomization_ps``: every pair
of every measure in ``pairwise_significance``) share one draw whatever its size.

Every function here raises :class:`StatisticRefused` (with its ``reason``) where the
figure cannot be honest: too few values, no spread, a degenerate bootstrap. The unit
of resampling is the row given: rows that are not independent (variants of one
parent) must be reduced to one value per unit first (docs/statistics.md).
scipy and statsmodels load inside the functions: loading Dagster definitions stays fast.
"""

from __future__ import annotations

import gc
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

import numpy as np
import polars as pl

from mama_pipeline.store.table_schema import table_schema

SIGNIFICANCE_SCHEMA = table_schema("significance")
ELEMENTS_PER_CALL = 4_000_000  # values per vectorised resampling batch (32 MB as float64)
MIN_INTERVAL_N = 30  # fewer values: a bootstrap interval is refused (too narrow below: docs/statistics.md)
MIN_PAIRED_TEST_N = 2  # fewer pairs: the randomization test is refused
KEPT_DRAWS = 64_000_000  # most drawn values (n x resamples, all sizes) kept for the next figures of a seed and size
_KEPT: OrderedDict[tuple, tuple[np.ndarray, ...]] = OrderedDict()  # (kind, seed, n, resamples, batch) -> batches
_KEPT_LOCK = threading.Lock()


class StatisticRefused(ValueError):
    """A figure that cannot be computed honestly from its input; ``reason`` is the line a page shows."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def batch_for(n: int) -> int:
    """Resamples per vectorised batch for ``n`` queries or items: memory stays near ELEMENTS_PER_CALL values
    whatever ``n``; the results do not depend on the batch."""
    return max(1, ELEMENTS_PER_CALL // max(n, 1))


def compact(values: np.ndarray) -> np.ndarray:
    """Whole numbers of small size (0/1 hits, correctness) as int8, other values unchanged.

    Resampling gathers n values per resample: a byte each instead of eight. The statistics are the same bit
    for bit, since sums and differences of whole numbers are exact in float64 whatever the order of summation.
    """
    values = np.asarray(values)
    if values.size and values.dtype.kind == "f" and np.all(np.abs(values) <= 63) and np.all(values == np.trunc(values)):
        return values.astype(np.int8)
    return values


def _checked(values: np.ndarray, what: str) -> np.ndarray:
    values = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(values)):
        raise StatisticRefused(f"{what}: {int(np.sum(~np.isfinite(values)))} of {values.size} values are not finite")
    return values


def _index_batches(rng: np.random.Generator, n: int, n_resamples: int, batch: int | None) -> Iterator[np.ndarray]:
    """The resampled rows of a bootstrap of ``n`` values, a batch of resamples at a time, as scipy draws them."""
    step = batch or n_resamples
    for k in range(0, n_resamples, step):
        yield rng.integers(0, n, (min(step, n_resamples - k), n))


def _flip_batches(rng: np.random.Generator, n: int, n_resamples: int, batch: int | None) -> Iterator[np.ndarray]:
    """The sign flips (True: swapped) of a randomization test of ``n`` pairs, a batch at a time: scipy shuffles
    each pair with one 32-bit draw (its low bit 0 swaps a and b), a whole batch at a time."""
    step = min(batch or n_resamples, n_resamples)
    for k in range(0, n_resamples, step):
        bits = rng.integers(0, 2**32, (step, n), dtype=np.uint32)[: min(step, n_resamples - k)]
        yield (bits & 1) == 0


def _seeded(kind: str, seed: int, n: int, n_resamples: int) -> Iterable[np.ndarray]:
    """The batches of :func:`_index_batches` (``kind`` "index": row indices, kept in the smallest unsigned type
    that holds them) or of :func:`_flip_batches` ("flip") from a generator seeded with ``seed``. Every figure of
    one seed and size resamples the same rows (a board's entries, measures and pairs): the batches are kept,
    read-only, for the next figure, the least recently used let go beyond KEPT_DRAWS values in all."""
    batch = batch_for(n)
    batches = _index_batches if kind == "index" else _flip_batches
    if n * n_resamples > KEPT_DRAWS:
        return batches(np.random.default_rng(seed), n, n_resamples, batch)
    key = (kind, seed, n, n_resamples, batch)
    with _KEPT_LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    small = np.min_scalar_type(max(n - 1, 0))
    drawn = tuple(b.astype(small) if kind == "index" else b for b in batches(np.random.default_rng(seed), *key[2:]))
    for b in drawn:
        b.flags.writeable = False
    with _KEPT_LOCK:
        _KEPT[key] = drawn
        while sum(k[2] * k[3] for k in _KEPT) > KEPT_DRAWS:
            _KEPT.popitem(last=False)
    return drawn


def bca_interval_of_mean(
    values: np.ndarray, n_resamples: int, rng: np.random.Generator, confidence: float = 0.95, batch: int | None = None
) -> tuple[float, float]:
    """BCa bootstrap interval of the mean of ``values`` (rows resampled), as scipy's ``bootstrap(method="BCa")``
    computes it from the same ``rng`` and ``batch``, with the jackknife's leave-one-out means in O(n).

    Refused below MIN_INTERVAL_N values, for values without spread (every resample would repeat the sample's
    mean: no interval can be sized from it) and where the bootstrap is degenerate (every resample on one side
    of the estimate, or an interval that is empty or misses its estimate).
    """
    return _one(_bcas([values], n_resamples, lambda n: _index_batches(rng, n, n_resamples, batch), confidence))


def _one(figures: list[tuple]):
    """The figure of a one-element :func:`_bcas` or :func:`_sign_flip_ps`, or its refusal raised."""
    ((figure, why),) = figures
    if why is not None:
        raise StatisticRefused(why)
    return figure


def _by_size(prepared: list[tuple]) -> dict[int, list[int]]:
    """The positions of the prepared (not refused) series, by their number of values (the size of the array
    their preparation starts with)."""
    groups: dict[int, list[int]] = {}
    for i, (ready, _why) in enumerate(prepared):
        if ready is not None:
            groups.setdefault(ready[0].size, []).append(i)
    return groups


def _bca_setup(values: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(values compacted, their mean, BCa's acceleration from the O(n) jackknife), or the refusal."""
    x = _checked(values, "interval")
    n = x.size
    if n < MIN_INTERVAL_N:
        raise StatisticRefused(
            f"interval: {n} value{'' if n == 1 else 's'}, fewer than the {MIN_INTERVAL_N} a bootstrap interval needs"
        )
    if np.all(x == x[0]):
        raise StatisticRefused(f"interval: all {n} values equal ({x[0]:g}); no spread to size an interval")
    x = compact(x)
    with np.errstate(over="ignore", invalid="ignore"):
        theta = np.mean(x)
        total = float(np.sum(x, dtype=float))
        loo = (total - x) / (n - 1)  # leave-one-out means: the jackknife of scipy's BCa in O(n)
        u = (n - 1) * (np.mean(loo) - loo)
        a_hat = 1 / 6 * (np.sum(u**3) / n**3) / (np.sum(u**2) / n**2) ** (3 / 2)
    if not (np.isfinite(theta) and np.isfinite(a_hat)):
        raise StatisticRefused(f"interval: values too large for float64 sums (largest |value| {np.max(np.abs(x)):g})")
    return x, theta, a_hat


def _bca_interval(theta: float, a_hat: float, theta_b: np.ndarray, confidence: float) -> tuple[float, float]:
    """The BCa interval from the estimate, the acceleration and the resampled means, or the refusal."""
    from scipy import special, stats

    percentile = (np.count_nonzero(theta_b < theta) + np.count_nonzero(theta_b <= theta)) / (2 * theta_b.size)
    z0 = special.ndtri(percentile)
    if not np.isfinite(z0):
        raise StatisticRefused(f"interval: every one of {theta_b.size} resamples lies on one side of the mean")
    z_alpha = float(special.ndtri((1 - confidence) / 2))
    levels = [special.ndtr(z0 + (z0 + z) / (1 - a_hat * (z0 + z))) for z in (z_alpha, -z_alpha)]
    low, high = (float(v) for v in stats.quantile(theta_b, np.asarray(levels), axis=-1))
    if not (np.isfinite(low) and np.isfinite(high) and low <= theta <= high and low < high):
        raise StatisticRefused(f"interval: BCa is degenerate here ([{low:g}, {high:g}] around {float(theta):g})")
    return low, high


def _bcas(
    series: Sequence[np.ndarray], n_resamples: int, draws: Callable[[int], Iterable[np.ndarray]], confidence: float
) -> list[tuple[tuple[float, float] | None, str | None]]:
    """(interval, None) or (None, reason) of :func:`bca_interval_of_mean` for each series, on the resampled rows
    ``draws(n)`` gives for n values: drawn once for all the series of one size, each series then resampled on
    the same rows exactly as it would be alone."""
    prepared = [_refusal(_bca_setup, values) for values in series]
    results: list[tuple] = [(None, why) for _ready, why in prepared]
    for n, members in _by_size(prepared).items():
        theta_b = np.empty((len(members), n_resamples))
        k = 0
        for rows in draws(n):
            for j, i in enumerate(members):
                theta_b[j, k : k + rows.shape[0]] = np.mean(prepared[i][0][0][rows], axis=-1)
            k += rows.shape[0]
        for j, i in enumerate(members):
            _x, theta, a_hat = prepared[i][0]
            results[i] = _refusal(_bca_interval, theta, a_hat, theta_b[j], confidence)
    return results


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b of paired values; a pair with a value that is not finite stays so (its figure is refused)."""
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if a.size != b.size:
        raise ValueError(f"paired values of different lengths: {a.size} and {b.size}")
    with np.errstate(over="ignore", invalid="ignore"):
        return a - b


def paired_bootstrap_ci(
    a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int, confidence: float = 0.95
) -> tuple[float, float]:
    """BCa bootstrap interval of mean(a - b), resampling queries (pairs) together: scipy's paired BCa,
    equal to ``bootstrap((a, b), mean(a - b), paired=True, method="BCa")`` on the same seed. Refused as
    :func:`bca_interval_of_mean` refuses the differences (all equal: no interval, the difference is exact)."""
    return _one(paired_bootstrap_cis([(a, b)], n_resamples, seed, confidence))


def paired_bootstrap_cis(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], n_resamples: int, seed: int, confidence: float = 0.95
) -> list[tuple[tuple[float, float] | None, str | None]]:
    """(interval, None) or (None, reason) of :func:`paired_bootstrap_ci` for each pair, the resamples of one
    size drawn once for all of them (each figure as it would be alone)."""
    differences = [_difference(a, b) for a, b in pairs]
    return _bcas(differences, n_resamples, lambda n: _seeded("index", seed, n, n_resamples), confidence)


def bootstrap_mean_ci(values: np.ndarray, n_resamples: int, seed: int, confidence: float = 0.95) -> tuple[float, float]:
    """BCa bootstrap interval of the mean of per-query values (queries resampled); see :func:`bca_interval_of_mean`."""
    return _one(_bcas([values], n_resamples, lambda n: _seeded("index", seed, n, n_resamples), confidence))


def sign_flip_p(d: np.ndarray, n_resamples: int, rng: np.random.Generator, batch: int | None = None) -> float:
    """Two-sided p of mean(d) under random sign flips of each difference: scipy's ``permutation_test`` of
    mean(a - b) with ``permutation_type="samples"`` on the same ``rng``, as one array operation per batch.

    Where ``n_resamples`` reaches the 2^n sign patterns the test is exact (every pattern, as scipy). Refused
    below MIN_PAIRED_TEST_N pairs; all differences zero give p = 1 exactly (every pattern ties the observed 0).
    """
    return _one(_sign_flip_ps([d], n_resamples, lambda n: _flip_batches(rng, n, n_resamples, batch)))


def _two_sided_p(null: np.ndarray, observed: float, total: int, adjustment: int) -> float:
    """scipy's two-sided p of ``observed`` among ``total`` null statistics (plus ``adjustment`` for the
    observed one where they are a random sample), with its tolerance for ties."""
    gamma = abs(np.finfo(float).eps * 100 * observed)
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / (total + adjustment)
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / (total + adjustment)
    return float(np.clip(min(less, greater) * 2, 0.0, 1.0))


def _sign_flip_setup(d: np.ndarray, n_resamples: int) -> tuple[np.ndarray, float, np.ndarray | None] | float:
    """(differences compacted, their mean, the positions of the nonzero ones where they are whole numbers) for a
    sampled test, or the p where it needs no draws (all zero, or every sign pattern enumerated), or the refusal."""
    d = compact(_checked(d, "randomization"))
    n = d.size
    if n < MIN_PAIRED_TEST_N:
        raise StatisticRefused(
            f"randomization: {n} pair{'' if n == 1 else 's'}, fewer than the {MIN_PAIRED_TEST_N} a paired test needs"
        )
    if not np.any(d):
        return 1.0
    with np.errstate(over="ignore"):
        observed = np.mean(d)
    if not np.isfinite(observed):
        raise StatisticRefused(f"randomization: differences too large for float64 sums (largest {np.max(np.abs(d)):g})")
    if n_resamples >= 2**n:
        signs = np.array(list(itertools.product((1, -1), repeat=n)), dtype=np.int8)
        return _two_sided_p(np.mean(signs * d, axis=-1), observed, 2**n, 0)
    # whole numbers: np.mean's float sum is exact in any order and a 0 adds nothing, so only the nonzero ones flip
    return d, observed, np.flatnonzero(d) if d.dtype == np.int8 else None


def _null_means(d: np.ndarray, moved: np.ndarray | None, swapped: np.ndarray) -> np.ndarray:
    """mean(d) with the rows of ``swapped`` (True: the sign flipped) applied, one value per row; ``moved``: the
    only positions that can change the sum (None: all)."""
    if moved is not None:
        return np.where(swapped[:, moved], -d[moved], d[moved]).sum(axis=-1, dtype=float) / d.size
    return np.mean(np.where(swapped, -d, d), axis=-1)


def _sign_flip_ps(
    series: Sequence[np.ndarray], n_resamples: int, draws: Callable[[int], Iterable[np.ndarray]]
) -> list[tuple[float | None, str | None]]:
    """(p, None) or (None, reason) of :func:`sign_flip_p` for each series of differences, on the sign flips
    ``draws(n)`` gives for n pairs: drawn once for all the series of one size, each series then flipped by
    the same signs exactly as it would be alone."""
    prepared = [_refusal(_sign_flip_setup, d, n_resamples) for d in series]
    results: list[tuple] = [(ready, None) if isinstance(ready, float) else (None, why) for ready, why in prepared]
    sampled = [(ready if isinstance(ready, tuple) else None, why) for ready, why in prepared]
    for n, members in _by_size(sampled).items():
        nulls: list[list[np.ndarray]] = [[] for _ in members]
        for swapped in draws(n):
            for j, i in enumerate(members):
                d, _observed, moved = sampled[i][0]
                nulls[j].append(_null_means(d, moved, swapped))
        for j, i in enumerate(members):
            results[i] = (_two_sided_p(np.concatenate(nulls[j]), sampled[i][0][1], n_resamples, 1), None)
    return results


def paired_randomization_p(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    """Two-sided p of mean(a - b) under random swaps of a and b within each query (:func:`sign_flip_p`)."""
    return _one(paired_randomization_ps([(a, b)], n_resamples, seed))


def paired_randomization_ps(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], n_resamples: int, seed: int
) -> list[tuple[float | None, str | None]]:
    """(p, None) or (None, reason) of :func:`paired_randomization_p` for each pair, the sign flips of one size
    drawn once for all of them (each p as it would be alone)."""
    differences = [_difference(a, b) for a, b in pairs]
    return _sign_flip_ps(differences, n_resamples, lambda n: _seeded("flip", seed, n, n_resamples))


def exact_mcnemar(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """(queries hit only by a, only by b, exact McNemar p) for 0/1 per-query hits.

    The exact conditional (binomial) test on the discordant queries; no discordant query gives p = 1 exactly.
    Refused without queries and for values other than 0/1.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if a.size == 0:
        raise StatisticRefused("McNemar: no queries")
    if not (np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all()):
        raise StatisticRefused("McNemar: values other than 0 and 1")
    a1, b1 = a.astype(bool), b.astype(bool)
    table = [[int(np.sum(a1 & b1)), int(np.sum(a1 & ~b1))], [int(np.sum(~a1 & b1)), int(np.sum(~a1 & ~b1))]]
    if table[0][1] + table[1][0] == 0:
        return 0, 0, 1.0
    return table[0][1], table[1][0], float(mcnemar(table, exact=True).pvalue)


def refused_rows(table: pl.DataFrame, column: str = "refused") -> str:
    """``"k of n rows"`` of ``table`` with a refused figure (its reason in ``column``), for an asset's metadata."""
    k = table.height - table[column].null_count() if column in table.columns else 0
    return f"{k} of {table.height} rows"


def _refusal(figure, *args):
    """(result, None) or (None, reason) for a figure that may be refused."""
    try:
        return figure(*args), None
    except StatisticRefused as refused:
        return None, refused.reason


def pairwise_significance(
    per_query: pl.DataFrame,
    measures: Sequence[str],
    retrievers: Sequence[str],
    *,
    n_resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
    binary_measures: Collection[str],
) -> pl.DataFrame:
    """One row per (measure, pair of retrievers in the given order).

    Pairs are aligned by query id; a query missing for either retriever is an error
    (per-query tables from ``scoring.evaluate`` hold every benchmark query). The
    exact McNemar test runs on the measures in ``binary_measures`` (0/1 by definition;
    one holding other values is an error). A refused figure is null and its
    reason stands in ``refused``; the other figures of the row are kept.
    """
    blocks = []
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
        if measure in binary_measures and not all(np.isin(v, (0.0, 1.0)).all() for v in values.values()):
            raise ValueError(f"{measure!r} is named 0/1 but holds other values")
        blocks.append((measure, [(ra, rb, values[ra], values[rb]) for ra, rb in itertools.combinations(retrievers, 2)]))
    # every pair of every measure is resampled on the same rows and flipped by the same signs (one seed, one
    # size): drawn once for all of them, not once a figure where the draws outgrow those kept (KEPT_DRAWS)
    pairs = [(a, b) for _measure, block in blocks for _ra, _rb, a, b in block]
    intervals = iter(paired_bootstrap_cis(pairs, n_resamples, seed, confidence))
    ps = iter(paired_randomization_ps(pairs, n_resamples, seed))
    rows = []
    for measure, block in blocks:
        block_rows = []
        for ra, rb, a, b in block:
            (interval, why_interval), (p, why_p) = next(intervals), next(ps)
            row = {
                "measure": measure,
                "retriever_a": ra,
                "retriever_b": rb,
                "n_queries": a.size,
                "mean_a": float(a.mean()),
                "mean_b": float(b.mean()),
                "diff": float((a - b).mean()),
                "ci_low": interval[0] if interval else None,
                "ci_high": interval[1] if interval else None,
                "p_randomization": p,
                "only_a": None,
                "only_b": None,
                "p_mcnemar": None,
                "refused": "; ".join(why for why in (why_interval, why_p) if why) or None,
            }
            if measure in binary_measures:
                row["only_a"], row["only_b"], row["p_mcnemar"] = exact_mcnemar(a, b)
            block_rows.append(row)
        for test in ("randomization", "mcnemar"):
            adjusted = holm([r[f"p_{test}"] for r in block_rows])
            for r, p in zip(block_rows, adjusted):
                r[f"p_{test}_holm"] = p
        rows.extend(block_rows)
    return pl.DataFrame(rows, schema=SIGNIFICANCE_SCHEMA)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p values (statsmodels multipletests); a missing p stays missing, the others are
    adjusted as the family they form. A p outside [0, 1] (or NaN) is refused.

    statsmodels' Holm branch ends in a full ``gc.collect()``, which takes ~0.5 s on the heap of a
    process that has loaded Dagster and the models (35 s of a 116 s no-op run of the sample); the
    heap is frozen around the call so that the collection only looks at objects made since.
    """
    from statsmodels.stats.multitest import multipletests

    present = [p for p in pvalues if p is not None]
    if not all(0.0 <= p <= 1.0 for p in present):
        raise StatisticRefused(f"Holm: p values outside [0, 1]: {[p for p in present if not 0.0 <= p <= 1.0]}")
    if not present:
        return [None] * len(pvalues)
    gc.freeze()
    try:
        adjusted = iter(float(p) for p in multipletests(present, method="holm")[1])
    finally:
        gc.unfreeze()
    return [None if p is None else next(adjusted) for p in pvalues]
