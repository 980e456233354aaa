"""Calibration of evaluation.significance: each procedure fed simulated data with a known truth.

Promises checked (docs/statistics.md, "Intervals and paired tests"):
- 95% BCa intervals of a mean and of a paired mean difference cover the truth in 93-97% of replicates (up to
  2 Monte Carlo standard errors) at n = 300 (0/1, skewed, tied and grouped-then-reduced data), in at least 90% at n = 30 (narrow below ~100,
  as bootstrap percentile intervals are; 0/1 data at n = 30 cover more, being discrete), and are refused
  below MIN_INTERVAL_N (n = 2, 3, 10) and for all-equal values.
- The unit resampled is the row given: rows grouped under a parent (variants of one query) must be reduced to
  one value per parent; resampling the grouped rows undercovers (shown here, so the rule is not folklore).
- The paired randomization (sign-flip) test and the exact McNemar test reject a true null at alpha = 0.05 in at
  most 5% + 2 standard errors of replicates (n = 2, 3: never, exact and conservative), and reject a planted
  difference of the stated size with the stated power.
- Holm keeps the family-wise error at most alpha + 2 standard errors.
Replicates are drawn as one array (replicates x n) from fixed seeds; the statistics are the functions proven
equal to scipy in test_significance_fast.py.
"""

import math

import numpy as np
import pytest

from mama_pipeline.evaluation._significance import (
    MIN_INTERVAL_N,
    StatisticRefused,
    bca_interval_of_mean,
    exact_mcnemar,
    holm,
    sign_flip_p,
)

ALPHA = 0.05
RESAMPLES = 499  # per interval and per test; the pages use evaluation.resamples (more), which only sharpens them


def coverage(samples: np.ndarray, truth: float, seed: int = 0) -> tuple[float, int]:
    """(share of the computed intervals that hold ``truth``, intervals refused) over the rows of ``samples``."""
    held = refused = 0
    for i, row in enumerate(samples):
        try:
            low, high = bca_interval_of_mean(row, RESAMPLES, np.random.default_rng(seed + i))
        except StatisticRefused:
            refused += 1
            continue
        held += low <= truth <= high
    computed = len(samples) - refused
    return (held / computed if computed else math.nan), refused


def rejections(differences: np.ndarray, seed: int = 0, resamples: int = RESAMPLES) -> float:
    """Share of rows of ``differences`` whose sign-flip p is below ALPHA."""
    p = [sign_flip_p(d, resamples, np.random.default_rng(seed + i)) for i, d in enumerate(differences)]
    return float(np.mean(np.array(p) < ALPHA))


def in_band(share: float, replicates: int) -> bool:
    """``share`` (coverage estimated from ``replicates``) is consistent with a true coverage in 93-97%: inside
    the band widened by 2 Monte Carlo standard errors (1.4 points at 1,000 replicates)."""
    se = math.sqrt(0.95 * 0.05 / replicates)
    return 0.93 - 2 * se <= share <= 0.97 + 2 * se


def bound(rate: float, replicates: int) -> float:
    """rate + 2 standard errors of a share estimated from ``replicates``."""
    return rate + 2 * math.sqrt(rate * (1 - rate) / replicates)


REPS = 1_000
N = 300


def draws(kind: str, rng: np.random.Generator, shape) -> tuple[np.ndarray, float]:
    """(values, true mean) of a kind of data."""
    if kind == "binary":
        return (rng.random(shape) < 0.3).astype(float), 0.3
    if kind == "skewed":  # exponential: skewness 2
        return rng.exponential(1.0, shape), 1.0
    if kind == "tied":  # graded labels: four values, most of them tied
        levels, weights = np.array([0.0, 1 / 3, 2 / 3, 1.0]), np.array([0.4, 0.3, 0.2, 0.1])
        return rng.choice(levels, shape, p=weights), float(levels @ weights)
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["binary", "skewed", "tied"])
def test_mean_interval_covers_the_truth_93_to_97_percent_at_300(kind):
    values, truth = draws(kind, np.random.default_rng(1), (REPS, N))
    share, refused = coverage(values, truth)
    assert refused == 0 and in_band(share, REPS), share


@pytest.mark.parametrize("kind", ["binary", "skewed", "tied"])
def test_paired_difference_interval_covers_the_truth_93_to_97_percent_at_300(kind):
    rng = np.random.default_rng(2)
    a, mean_a = draws(kind, rng, (REPS, N))
    b, mean_b = draws(kind, rng, (REPS, N))
    keep = rng.random((REPS, N)) < 0.5  # b equals a on about half the queries: correlated, many zero differences
    b = np.where(keep, a, b)
    share, refused = coverage(a - b, mean_a - mean_b)  # same kind on both sides: the true difference is 0
    assert refused == 0 and in_band(share, REPS), share


def test_grouped_rows_are_reduced_to_their_parent_before_resampling():
    # 300 parents x 3 near-identical variants: the parent's effect dominates, variants add a little noise
    rng = np.random.default_rng(3)
    parent = rng.normal(0.0, 1.0, (REPS, N, 1))
    rows = parent + rng.normal(0.0, 0.2, (REPS, N, 3))
    per_parent, _ = coverage(rows.mean(axis=2), 0.0)
    assert in_band(per_parent, REPS), per_parent  # one value per parent: the unit the data were drawn by
    per_row, _ = coverage(rows.reshape(REPS, 3 * N)[:200], 0.0)
    # the 900 rows resampled alone: far too narrow (design effect 1 + 2 x 0.96 = 2.92, so about
    # P(|Z| < 1.96 / sqrt(2.92)) = 75%)
    assert per_row < 0.85, per_row


@pytest.mark.parametrize("kind", ["binary", "skewed", "tied"])
def test_mean_interval_at_30_is_at_worst_a_little_narrow(kind):
    values, truth = draws(kind, np.random.default_rng(4), (REPS, 30))
    share, refused = coverage(values, truth)
    computed = REPS - refused
    assert computed >= 0.99 * REPS and share >= 0.90, (share, refused)  # documented: 90% or more at n = 30


@pytest.mark.parametrize("n", [2, 3, 10])
def test_mean_interval_is_refused_below_the_minimum(n):
    assert n < MIN_INTERVAL_N
    values, _ = draws("skewed", np.random.default_rng(n), (50, n))
    share, refused = coverage(values, 1.0)
    assert refused == 50 and math.isnan(share)


def test_interval_of_all_equal_values_is_refused_so_a_rare_event_never_gets_a_zero_width_interval():
    # 300 queries at a true hit rate of 0.995: about 22% of samples hold only hits; those get no interval,
    # and the intervals that are computed still cover
    values = (np.random.default_rng(5).random((REPS, N)) < 0.995).astype(float)
    share, refused = coverage(values, 0.995)
    all_equal = int(np.sum(values.min(axis=1) == 1.0))
    assert refused >= all_equal > 150  # every all-hit sample is refused
    assert share >= 0.90, share  # rare events remain hard: documented as at least 90% here


@pytest.mark.parametrize("kind", ["binary", "skewed", "tied"])
def test_randomization_type_one_error_at_most_alpha_plus_two_se_at_300(kind):
    rng = np.random.default_rng(6)
    a, _ = draws(kind, rng, (REPS, N))
    b, _ = draws(kind, rng, (REPS, N))  # exchangeable: the null holds
    rate = rejections(a - b)
    assert rate <= bound(ALPHA, REPS), rate


@pytest.mark.parametrize("n", [2, 3])
def test_randomization_on_two_or_three_pairs_is_exact_and_never_rejects(n):
    d = np.random.default_rng(n).normal(5.0, 1.0, (200, n))  # a large true difference
    p = np.array([sign_flip_p(row, RESAMPLES, np.random.default_rng(0)) for row in d])
    assert np.all(p >= 2.0 ** (1 - n)) and np.all(p >= 0.25)  # exact: the smallest attainable two-sided p
    assert rejections(d) == 0.0


def test_randomization_type_one_error_at_10_pairs_exact():
    d = np.random.default_rng(7).normal(0.0, 1.0, (REPS, 10))
    rate = rejections(d, resamples=2_000)  # 2,000 >= 2^10: every sign pattern, exact
    assert rate <= bound(ALPHA, REPS), rate


def test_grouped_rows_inflate_the_randomization_test_unless_reduced_to_parents():
    rng = np.random.default_rng(8)
    parent = rng.normal(0.0, 1.0, (REPS, 100, 1))
    d = parent + rng.normal(0.0, 0.2, (REPS, 100, 3))  # variants' differences share their parent's: grouped null
    assert rejections(d.mean(axis=2)) <= bound(ALPHA, REPS)
    # rows flipped one by one: the null is rejected often (about P(|Z| > 1.96 / sqrt(2.92)) = 25%)
    assert rejections(d.reshape(REPS, 300)[:300]) > 0.15


def test_randomization_power_against_a_planted_difference():
    # d ~ Normal(0.2, 1) on 300 pairs: a t-test's power is 0.93; the sign-flip test is stated at 0.90 or more
    d = np.random.default_rng(9).normal(0.2, 1.0, (500, N))
    assert rejections(d) >= 0.90
    # 0/1 hits, 0.65 against 0.50 on 300 queries (independent): power 0.9 or more (normal approximation 0.96)
    rng = np.random.default_rng(10)
    a, b = (rng.random((500, N)) < 0.65).astype(float), (rng.random((500, N)) < 0.50).astype(float)
    assert rejections(a - b) >= 0.90


def mcnemar_rejections(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([exact_mcnemar(x, y)[2] < ALPHA for x, y in zip(a, b)]))


@pytest.mark.parametrize("n", [10, 300])
def test_mcnemar_type_one_error_at_most_alpha_plus_two_se(n):
    rng = np.random.default_rng(11 + n)
    a, b = (rng.random((REPS, n)) < 0.4).astype(float), (rng.random((REPS, n)) < 0.4).astype(float)
    assert mcnemar_rejections(a, b) <= bound(ALPHA, REPS)


@pytest.mark.parametrize("n", [2, 3])
def test_mcnemar_on_two_or_three_queries_never_rejects(n):
    rng = np.random.default_rng(n)
    a, b = np.ones((100, n)), (rng.random((100, n)) < 0.1).astype(float)  # a far better: still no rejection
    assert all(exact_mcnemar(x, y)[2] >= 0.25 for x, y in zip(a, b))


def test_mcnemar_power_against_a_planted_difference():
    # discordant queries: 15% hit only by a, 5% only by b, on 300 queries -> power 0.95 or more
    u = np.random.default_rng(12).random((500, N))
    a = ((u < 0.15) | (u >= 0.20) & (u < 0.60)).astype(float)  # a alone: [0, .15); both: [.20, .60)
    b = ((u >= 0.15) & (u < 0.20) | (u >= 0.20) & (u < 0.60)).astype(float)  # b alone: [.15, .20)
    assert mcnemar_rejections(a, b) >= 0.95


def test_holm_keeps_the_family_wise_error_over_the_pairs_of_five_null_retrievers():
    # 5 retrievers with the same distribution: 10 pairwise sign-flip tests on shared queries (dependent p values).
    # 1,999 resamples: the smallest two-sided p, 2/2000, times 10 is 0.01 < alpha, so the family can err at all
    rng = np.random.default_rng(13)
    reps, n = 400, 60
    family_errors = 0
    for r in range(reps):
        values = rng.exponential(1.0, (5, n))
        p = [
            sign_flip_p(values[i] - values[j], 1_999, np.random.default_rng(r * 10 + k))
            for k, (i, j) in enumerate((i, j) for i in range(5) for j in range(i + 1, 5))
        ]
        family_errors += min(holm(p)) < ALPHA
    assert 0.01 <= family_errors / reps <= bound(ALPHA, reps), family_errors / reps


def test_holm_family_wise_error_on_independent_null_p_values():
    p = np.random.default_rng(14).random((REPS, 10))  # exact uniform p values: any valid test's null
    errors = sum(min(holm(list(row))) < ALPHA for row in p)
    assert errors / REPS <= bound(ALPHA, REPS)
    assert errors / REPS >= 0.02  # not vacuous: Holm is close to alpha for independent p values
