"""Property-based tests (Hypothesis) of every statistic in evaluation.significance on tiny and degenerate input:
a figure or a StatisticRefused with its reason, never another exception; intervals hold their estimate; p in [0, 1]."""

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mama_pipeline.evaluation._significance import (
    MIN_INTERVAL_N,
    StatisticRefused,
    bootstrap_mean_ci,
    exact_mcnemar,
    holm,
    paired_bootstrap_ci,
    paired_randomization_p,
    pairwise_significance,
)

PROPERTIES = settings(
    max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
VALUE = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, -1.0, 1e-300, 1e300, -1e300]),  # 0/1, ties, huge and tiny magnitudes
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(0, 1e12).map(lambda x: x**1.5),  # heavily skewed
)


def sample(min_size: int = 0, max_size: int = 5, elements=VALUE):
    """Tiny samples (n = 0..5 by default), all-equal ones among them, or a few values repeated past the
    interval's minimum so that the interval itself is computed."""
    tiny = st.lists(elements, min_size=min_size, max_size=max_size)
    equal = st.tuples(elements, st.integers(min_size, max_size)).map(lambda t: [t[0]] * t[1])
    repeated = st.tuples(st.lists(elements, min_size=1, max_size=4), st.integers(0, 3)).map(
        lambda t: t[0] * (MIN_INTERVAL_N // len(t[0]) + 1 + t[1])
    )
    return st.one_of(tiny, equal, repeated).map(lambda v: np.array(v, dtype=float))


def paired(elements=VALUE):
    """Pairs of equal length: independent, all tied (a == b), or tied but for a few pairs."""
    a = sample(elements=elements)
    return st.one_of(
        a.flatmap(lambda x: st.tuples(st.just(x), st.lists(elements, min_size=x.size, max_size=x.size))),
        a.map(lambda x: (x, x.copy())),
        a.map(lambda x: (x, np.where(np.arange(x.size) % 7 == 0, 0.0, x))),
    ).map(lambda t: (np.asarray(t[0], dtype=float), np.asarray(t[1], dtype=float)))


def _interval_or_refusal(compute, estimate):
    try:
        low, high = compute()
    except StatisticRefused as refused:
        assert refused.reason and refused.reason == str(refused)
        return None
    assert np.isfinite(low) and np.isfinite(high) and low <= estimate <= high and low < high
    return low, high


@PROPERTIES
@given(sample())
def test_mean_interval_holds_its_mean_or_is_refused(values):
    with np.errstate(over="ignore"):
        estimate = float(np.mean(values)) if values.size else np.nan
    result = _interval_or_refusal(lambda: bootstrap_mean_ci(values, 199, 0), estimate)
    if values.size < MIN_INTERVAL_N or (values.size and np.all(values == values[0])):
        assert result is None


@PROPERTIES
@given(paired())
def test_paired_interval_holds_its_difference_or_is_refused(pair):
    a, b = pair
    with np.errstate(over="ignore", invalid="ignore"):
        estimate = float(np.mean(a - b)) if a.size else np.nan
    result = _interval_or_refusal(lambda: paired_bootstrap_ci(a, b, 199, 0), estimate)
    if np.array_equal(a, b):
        assert result is None  # every difference 0: no spread


@PROPERTIES
@given(paired())
def test_randomization_p_is_a_probability_or_refused(pair):
    a, b = pair
    try:
        p = paired_randomization_p(a, b, 199, 0)
    except StatisticRefused as refused:
        assert refused.reason
        return
    assert 0.0 < p <= 1.0
    if np.array_equal(a, b):
        assert p == 1.0  # all pairs tied: every sign pattern ties the observed 0


@PROPERTIES
@given(paired(elements=st.sampled_from([0.0, 1.0])))
def test_mcnemar_p_is_a_probability_or_refused(pair):
    a, b = pair
    try:
        only_a, only_b, p = exact_mcnemar(a, b)
    except StatisticRefused as refused:
        assert a.size == 0 and refused.reason == "McNemar: no queries"
        return
    assert 0.0 < p <= 1.0 and only_a + only_b == int(np.sum(a != b))


@PROPERTIES
@given(st.lists(st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0.0, 1.0])), max_size=6))
def test_holm_gives_probabilities_no_smaller_than_the_raw_ones(pvalues):
    adjusted = holm(pvalues)
    assert [q is None for q in adjusted] == [p is None for p in pvalues]
    for p, q in zip(pvalues, adjusted):
        assert p is None or p <= q <= 1.0


@PROPERTIES
@given(paired(), st.booleans())
def test_pairwise_significance_never_crashes_and_says_why_a_figure_is_missing(pair, binary):
    a, b = pair
    if binary:
        a, b = (a > 0).astype(float), (b > 0).astype(float)
    ids = [f"q{i}" for i in range(a.size)]
    per_query = pl.DataFrame(
        {"retriever": ["a"] * a.size + ["b"] * b.size, "query_id": ids * 2, "measure": "m", "value": [*a, *b]},
        schema={"retriever": pl.String, "query_id": pl.String, "measure": pl.String, "value": pl.Float64},
    )
    try:
        table = pairwise_significance(
            per_query, ["m"], ["a", "b"], n_resamples=99, binary_measures={"m"} if binary else set()
        )
    except ValueError as error:  # no values at all is an input error with its own message, not a statistic
        assert a.size == 0 and "no per-query values" in str(error)
        return
    row = table.row(0, named=True)
    missing = row["ci_low"] is None or row["p_randomization"] is None
    assert missing == (row["refused"] is not None)
    assert row["p_randomization_holm"] is None or 0.0 <= row["p_randomization_holm"] <= 1.0
