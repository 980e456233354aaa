"""The remainder sample's recall interval: coverage at its nominal rate by simulation, refusals with reasons."""

import numpy as np
import polars as pl
import pytest

from mama_pipeline.judging._unjudged_estimate import recall_interval, remainder_sample, unjudged_estimates


def _coverage(relevant_judged, unjudged_flags, m, trials, seed, failed=0, failed_relevant=0):
    """Share of trials whose interval holds the labelled pairs' true recall; SRS of m from the unjudged pairs."""
    rng = np.random.default_rng(seed)
    flags = np.asarray(unjudged_flags)
    k_true = int(flags.sum())
    hit = 0
    for _ in range(trials):
        idx = rng.choice(flags.size, size=m, replace=False)
        h = int(flags[idx].sum())
        labelled_rel = relevant_judged + h
        truth = labelled_rel / (relevant_judged + k_true + failed_relevant)
        _, _, low, high, note = recall_interval(labelled_rel, flags.size, m, h, failed)
        assert note is None
        hit += low - 1e-12 <= truth <= high + 1e-12
    return hit / trials


@pytest.mark.parametrize(
    "relevant_judged, unjudged, rate, m, grouped",
    [
        (900, 20000, 0.01, 500, False),  # typical: few relevant left
        (50, 2000, 0.2, 40, False),  # many left, small sample
        (10, 300, 0.0, 30, False),  # nothing left (0 hits)
        (5, 50, 1.0, 5, False),  # all left relevant (m hits)
        (3, 40, 0.3, 2, False),  # tiny sample
        (200, 5000, 0.05, 200, True),  # relevance clustered in query groups of 50 pairs
    ],
)
def test_recall_interval_covers_at_its_nominal_rate(relevant_judged, unjudged, rate, m, grouped):
    rng = np.random.default_rng(11)
    if grouped:  # whole queries relevant or not: the sample is of pairs, so clustering must not break coverage
        groups = rng.random(unjudged // 50) < rate * 4
        flags = np.repeat(groups, 50) & (rng.random(unjudged) < 0.25)
    else:
        flags = np.zeros(unjudged, bool)
        flags[: round(rate * unjudged)] = True
    trials = 2000
    cov = _coverage(relevant_judged, flags, m, trials, seed=3)
    assert cov >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / trials), cov


def test_failed_pairs_widen_the_interval_and_coverage_holds():
    flags = np.zeros(3000, bool)
    flags[:90] = True
    cov = _coverage(300, flags, 150, 1500, seed=4, failed=20, failed_relevant=20)  # every failed pair relevant
    assert cov >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 1500), cov
    narrow = recall_interval(300, 3000, 150, 5)
    wide = recall_interval(300, 3000, 150, 5, failed=20)
    assert wide[2] < narrow[2] and wide[3] == narrow[3]


def test_interval_by_hand_with_clopper_pearson():
    from scipy.stats import beta

    point, recall, low, high, note = recall_interval(100, 1000, 100, 10)
    p_lo, p_hi = beta.ppf(0.025, 10, 91), beta.ppf(0.975, 11, 90)  # Clopper-Pearson, written out
    assert point == pytest.approx(1000 * 0.1 - 10)
    assert recall == pytest.approx(100 / (100 + 90))
    assert low == pytest.approx(100 / (100 + 1000 * p_hi - 10))
    assert high == pytest.approx(100 / (100 + max(10, 1000 * p_lo) - 10))


def test_degenerate_inputs_are_refused_with_a_reason():
    assert recall_interval(10, 0, 0, 0) == (0.0, 1.0, 1.0, 1.0, None)  # everything labelled
    assert recall_interval(10, 40, 40, 3)[1:4] == (1.0, 1.0, 1.0)  # the sample is the whole rest
    assert "no remainder sample" in recall_interval(10, 40, 0, 0)[4]
    assert "no relevant pair labelled" in recall_interval(0, 40, 10, 0)[4]
    assert recall_interval(0, 0, 0, 0)[4] == "no relevant pair in the pool"


def test_remainder_sample_is_seeded_uniform_and_bounded():
    pool = np.arange(0, 1000, 3)
    a, b = remainder_sample(pool, 50, 9), remainder_sample(pool, 50, 9)
    assert np.array_equal(a, b) and np.isin(a, pool).all() and np.unique(a).size == 50
    assert remainder_sample(pool, 5000, 9).size == pool.size
    counts = np.zeros(pool.size)
    for s in range(400):
        counts[np.searchsorted(pool, remainder_sample(pool, 50, s))] += 1
    assert counts.min() > 20 and counts.max() < 100  # expected 400 * 50 / 334 = 60 each


def test_estimates_per_tier_and_overall():
    pool = pl.DataFrame(
        {
            "query_id": ["a"] * 6 + ["b"] * 4,
            "tier": ["high"] * 6 + ["low"] * 4,
            "role": ["round", "round", "sample", None, None, "round", "round", "sample", None, "round"],
            "status": [
                "labelled",
                "labelled",
                "labelled",
                None,
                None,
                "failed",
                "labelled",
                "labelled",
                None,
                "labelled",
            ],
            "score": [6, 3, 5, None, None, None, 0, 0, None, 4],
        }
    )
    t = unjudged_estimates(pool, {"lenient": 3, "strict": 5})
    row = t.filter((pl.col("scope") == "all") & (pl.col("cut") == "lenient")).row(0, named=True)
    assert (row["pooled_pairs"], row["labelled_pairs"], row["unjudged_pairs"], row["failed_pairs"]) == (10, 6, 3, 1)
    assert (row["sample_pairs"], row["sample_relevant"], row["relevant_labelled"]) == (2, 1, 4)
    high = t.filter((pl.col("scope") == "high") & (pl.col("cut") == "strict")).row(0, named=True)
    assert (high["relevant_labelled"], high["sample_relevant"], high["sample_pairs"]) == (2, 1, 1)
    assert set(t["scope"]) == {"all", "high", "low"}
