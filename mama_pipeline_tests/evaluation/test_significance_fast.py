"""The O(n) BCa interval and the vectorised sign-flip test equal scipy's on the same resamples and signs."""

import numpy as np
import pytest
from scipy import stats

from mama_pipeline.evaluation._significance import (
    batch_for,
    bca_interval_of_mean,
    bootstrap_mean_ci,
    compact,
    paired_bootstrap_ci,
    paired_randomization_p,
    sign_flip_p,
)


def _diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def _scipy_bca(data, statistic, n_resamples, seed, batch, paired=False):
    ci = stats.bootstrap(
        data,
        statistic,
        paired=paired,
        vectorized=True,
        n_resamples=n_resamples,
        method="BCa",
        batch=batch,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return ci.low, ci.high


@pytest.mark.parametrize("n", [50, 3_162])
@pytest.mark.parametrize("kind", ["skewed", "binary", "tied"])
def test_bca_of_a_mean_and_of_a_paired_difference_equal_scipys(n, kind):
    rng = np.random.default_rng(n)
    draw = {
        "skewed": lambda: rng.lognormal(0, 1, n),
        "binary": lambda: (rng.random(n) < 0.3).astype(float),
        "tied": lambda: rng.choice([0.0, 1 / 3, 2 / 3, 1.0], n),
    }[kind]
    a, b = draw(), draw()
    for seed in (0, 1):
        ours = bca_interval_of_mean(a, 1_000, np.random.default_rng(seed), batch=batch_for(n))
        ref = _scipy_bca((compact(a),), np.mean, 1_000, seed, batch_for(n))
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            paired_bootstrap_ci(a, b, 1_000, seed),
            _scipy_bca((compact(a), compact(b)), _diff, 1_000, seed, batch_for(n), paired=True),
            rtol=0,
            atol=1e-12,
        )


def test_bca_equals_scipys_at_31256_items():
    # the paper's ten-fold scale, one scipy call (its n x (n - 1) jackknife takes seconds): scipy's paired
    # bootstrap of mean(a - b) draws the same indices and computes the same values as its one-sample bootstrap
    # of d = a - b, which whole-number values keep to a byte a value
    rng = np.random.default_rng(31_256)
    a = (rng.random(31_256) < 0.42).astype(float)
    b = np.where(rng.random(31_256) < 0.1, 1 - a, a)
    ref = _scipy_bca((compact(a - b),), np.mean, 200, 3, batch_for(a.size))
    np.testing.assert_allclose(paired_bootstrap_ci(a, b, 200, 3), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bootstrap_mean_ci(a - b, 200, 3), ref, rtol=0, atol=1e-12)


def test_bca_does_not_depend_on_the_batch():
    values = np.random.default_rng(2).gamma(0.5, size=400)
    whole = bca_interval_of_mean(values, 999, np.random.default_rng(5))
    assert bca_interval_of_mean(values, 999, np.random.default_rng(5), batch=7) == whole


@pytest.mark.parametrize("n", [50, 3_162, 31_256])
def test_sign_flip_p_equals_scipys_permutation_test_with_the_same_signs(n):
    rng = np.random.default_rng(n)
    a = rng.normal(0, 1, n)
    b = a + rng.normal(0.3 / np.sqrt(n), 1, n)  # p spread over (0, 1) across the seeds
    hits_a, hits_b = (rng.random(n) < 0.5).astype(float), (rng.random(n) < 0.5).astype(float)
    resamples, seeds, pairs = (500, range(3), ((a, b), (hits_a, hits_b))) if n < 10_000 else (100, [0], [(a, b)])
    for seed in seeds:
        for x, y in pairs:
            ref = stats.permutation_test(
                (compact(x), compact(y)),
                _diff,
                permutation_type="samples",
                vectorized=True,
                n_resamples=resamples,
                batch=batch_for(n),
                rng=np.random.default_rng(seed),
            )
            assert paired_randomization_p(x, y, resamples, seed) == pytest.approx(ref.pvalue, abs=1e-12)


def test_sign_flip_p_is_exact_where_the_resamples_reach_every_sign_pattern_as_scipy():
    rng = np.random.default_rng(9)
    for n in (2, 3, 5, 10):
        a, b = rng.normal(size=n), rng.normal(size=n)
        ref = stats.permutation_test(
            (a, b), _diff, permutation_type="samples", vectorized=True, n_resamples=5_000, rng=np.random.default_rng(0)
        )
        assert paired_randomization_p(a, b, 5_000, 0) == pytest.approx(ref.pvalue, abs=1e-12)
    # 2 pairs: the four sign patterns give |mean| >= observed at least twice, so p >= 1/2 whatever the data
    assert sign_flip_p(np.array([3.0, 4.0]), 5_000, np.random.default_rng(0)) == 0.5


def test_many_pairs_draw_once_and_give_each_pairs_figure_as_scipy(monkeypatch):
    # a board's pairs of one size share one draw of rows and one of signs (drawn again a figure, the draws
    # grew with measures x pairs x queries); each figure stays scipy's, a refused pair keeps its own reason
    from mama_pipeline.evaluation import _significance as sig

    monkeypatch.setattr(sig, "KEPT_DRAWS", 0)  # nothing kept between calls: every draw below is counted
    drawn = {"index": 0, "flip": 0}
    for kind, name in (("index", "_index_batches"), ("flip", "_flip_batches")):
        original = getattr(sig, name)

        def counted(*args, _original=original, _kind=kind):
            drawn[_kind] += 1
            return _original(*args)

        monkeypatch.setattr(sig, name, counted)
    rng = np.random.default_rng(4)
    n = 200
    graded = [(rng.random(n), rng.random(n)) for _ in range(3)]
    hits = [((rng.random(n) < 0.4).astype(float), (rng.random(n) < 0.5).astype(float)) for _ in range(2)]
    tied = (np.ones(n), np.zeros(n))  # every difference 1: no interval; a p from the shared signs
    short = (rng.random(10), rng.random(10))  # another size: too few for an interval, its own signs
    broken = (np.r_[np.inf, rng.random(n - 1)], rng.random(n))
    pairs = [*graded, *hits, tied, short, broken]
    intervals = sig.paired_bootstrap_cis(pairs, 300, 6)
    ps = sig.paired_randomization_ps(pairs, 300, 6)
    assert drawn == {"index": 1, "flip": 2}  # rows for the one size with an interval; signs for both sizes
    for (a, b), (interval, why) in zip([*graded, *hits], intervals):
        assert why is None
        np.testing.assert_allclose(
            interval, _scipy_bca((compact(a), compact(b)), _diff, 300, 6, batch_for(n), paired=True), atol=1e-12
        )
    for (a, b), (p, why) in zip([*graded, *hits, tied, short], ps):
        ref = stats.permutation_test(
            (compact(a), compact(b)),
            _diff,
            permutation_type="samples",
            vectorized=True,
            n_resamples=300,
            batch=batch_for(a.size),
            rng=np.random.default_rng(6),
        )
        assert why is None and p == pytest.approx(ref.pvalue, abs=1e-12)
    assert intervals[5] == (None, f"interval: all {n} values equal (1); no spread to size an interval")
    assert intervals[6] == (None, "interval: 10 values, fewer than the 30 a bootstrap interval needs")
    assert intervals[7] == (None, f"interval: 1 of {n} values are not finite")
    assert ps[7] == (None, f"randomization: 1 of {n} values are not finite")
