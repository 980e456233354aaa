"""Paired significance on small examples with known answers."""

import itertools

import numpy as np
import polars as pl
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from mama_pipeline.evaluation._significance import (
    StatisticRefused,
    batch_for,
    bootstrap_mean_ci,
    compact,
    exact_mcnemar,
    holm,
    paired_bootstrap_ci,
    paired_randomization_p,
    pairwise_significance,
    sign_flip_p,
)


def test_exact_mcnemar_known_value():
    # 10 discordant queries: a alone hits 1, b alone hits 9 -> two-sided binomial p = 2 * P(X <= 1 | 10, 1/2)
    a = np.array([1] * 5 + [1] + [0] * 9 + [0] * 5, dtype=float)
    b = np.array([1] * 5 + [0] + [1] * 9 + [0] * 5, dtype=float)
    only_a, only_b, p = exact_mcnemar(a, b)
    assert (only_a, only_b) == (1, 9)
    assert p == pytest.approx(2 * 11 / 1024)
    assert p == pytest.approx(mcnemar([[5, 1], [9, 5]], exact=True).pvalue)


def test_randomization_test_is_exact_sign_flip_on_small_samples():
    a = np.array([0.9, 0.7, 0.8, 0.4, 1.0, 0.6, 0.3, 0.5])
    b = np.array([0.5, 0.6, 0.2, 0.4, 0.7, 0.1, 0.35, 0.45])
    d = a - b
    observed = abs(d.mean())
    flips = [abs((d * np.array(signs)).mean()) for signs in itertools.product([1, -1], repeat=len(d))]
    expected = np.mean([f >= observed - 1e-12 for f in flips])  # all 256 sign patterns
    assert paired_randomization_p(a, b, n_resamples=5000, seed=0) == pytest.approx(expected)


def test_bootstrap_ci_is_scipys_paired_bca_and_seeded():
    rng = np.random.default_rng(3)
    a = rng.random(40)
    b = a - 0.1 + rng.normal(0, 0.05, 40)
    low, high = paired_bootstrap_ci(a, b, n_resamples=2000, seed=11)
    ref = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=2000,
        method="BCa",
        rng=np.random.default_rng(11),
    ).confidence_interval
    assert (low, high) == pytest.approx((ref.low, ref.high))
    assert low < (a - b).mean() < high and low > 0  # a is clearly better
    assert paired_bootstrap_ci(a, b, n_resamples=2000, seed=11) == (low, high)  # deterministic


def test_whole_number_values_give_the_same_statistics_bit_for_bit_as_floats():
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 2, 3000).astype(float), rng.integers(0, 2, 3000).astype(float)
    assert compact(a).dtype == np.int8 and compact(np.array([0.5, 1.0])).dtype == np.float64
    assert compact(np.array([0.0, 64.0])).dtype == np.float64  # differences of int8 values must not overflow
    ref = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=500,
        method="BCa",
        batch=1000,
        rng=np.random.default_rng(2),
    ).confidence_interval
    assert paired_bootstrap_ci(a, b, 500, 2) == (ref.low, ref.high)
    ref = stats.bootstrap(
        (a,), np.mean, vectorized=True, n_resamples=500, method="BCa", batch=1000, rng=np.random.default_rng(2)
    ).confidence_interval
    assert bootstrap_mean_ci(a, 500, 2) == (ref.low, ref.high)
    ref = stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=500,
        batch=1000,
        rng=np.random.default_rng(2),
    )
    assert paired_randomization_p(a, b, 500, 2) == ref.pvalue


def test_identical_systems_have_p_one_and_no_interval():
    a = np.tile([1.0, 0.0, 1.0, 1.0], 10)
    with pytest.raises(StatisticRefused, match="all 40 values equal"):
        paired_bootstrap_ci(a, a.copy(), 1000, 0)  # every difference 0: no spread to size an interval
    assert paired_randomization_p(a, a.copy(), 1000, 0) == 1.0  # every sign pattern ties the observed 0


def test_pairwise_significance_records_refusals_and_keeps_the_rest():
    per_query = pl.DataFrame(
        {"retriever": ["a", "b"], "query_id": ["q1", "q1"], "measure": ["hit", "hit"], "value": [1.0, 0.0]}
    )
    row = pairwise_significance(per_query, ["hit"], ["a", "b"], n_resamples=100, binary_measures={"hit"}).row(
        0, named=True
    )
    assert (row["n_queries"], row["diff"], row["ci_low"], row["p_randomization"], row["p_randomization_holm"]) == (
        1,
        1.0,
        None,
        None,
        None,
    )
    assert row["refused"] == (
        "interval: 1 value, fewer than the 30 a bootstrap interval needs; "
        "randomization: 1 pair, fewer than the 2 a paired test needs"
    )
    assert (row["only_a"], row["only_b"], row["p_mcnemar"]) == (1, 0, 1.0)  # exact: 2 * P(X >= 1 | 1, 1/2) = 1


def test_holm_known_values():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_holm_family_with_a_missing_p_keeps_its_other_adjusted_values():
    # the three present p values form the family: 0.01 * 3, max(0.03 * 2, 0.03), max(0.04 * 1, 0.06)
    assert holm([0.01, None, 0.04, 0.03]) == [pytest.approx(0.03), None, pytest.approx(0.06), pytest.approx(0.06)]
    assert holm([None, None]) == [None, None]


def test_mcnemar_only_on_the_measures_named_0_1():
    qids = [f"q{i}" for i in range(6)]
    per_query = pl.concat(
        [
            pl.DataFrame({"retriever": "a", "query_id": qids, "measure": m, "value": [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]})
            for m in ("correct", "grade")
        ]
        + [
            pl.DataFrame({"retriever": "b", "query_id": qids, "measure": m, "value": [0.0, 0.0, 1.0, 0.0, 1.0, 1.0]})
            for m in ("correct", "grade")
        ]
    )
    table = pairwise_significance(
        per_query, ["correct", "grade"], ["a", "b"], n_resamples=100, binary_measures={"correct"}
    )
    by = {r["measure"]: r for r in table.iter_rows(named=True)}
    assert (by["correct"]["only_a"], by["correct"]["only_b"]) == (2, 1)
    assert by["correct"]["p_mcnemar"] == pytest.approx(1.0)  # 2 vs 1 discordant: 2 * P(X <= 1 | 3, 1/2) = 1
    assert by["grade"]["p_mcnemar"] is None  # all 0/1 here, but not 0/1 by definition
    with pytest.raises(ValueError, match="'grade' is named 0/1 but holds other values"):
        pairwise_significance(
            per_query.with_columns(pl.col("value") / 2),
            ["grade"],
            ["a", "b"],
            n_resamples=100,
            binary_measures={"grade"},
        )


def test_holm_spares_the_heap_statsmodels_collects_and_leaves_gc_as_it_was(monkeypatch):
    import gc

    seen = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: seen.append(gc.get_freeze_count()) or real(*a))
    keep = [[i] for i in range(1000)]  # objects alive before the call
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert seen and seen[0] >= len(keep)  # statsmodels' full collection ran on a frozen heap
    assert gc.get_freeze_count() == 0  # and the heap is collectable again afterwards


def test_pairwise_table_covers_every_pair_and_applies_holm():
    rng = np.random.default_rng(5)
    qids = [f"q{i}" for i in range(50)]
    hits = {"a": rng.random(50) < 0.8, "b": rng.random(50) < 0.5, "c": rng.random(50) < 0.45}
    per_query = pl.concat(
        [
            pl.DataFrame({"retriever": name, "query_id": qids, "measure": "Success@5", "value": h.astype(float)})
            for name, h in hits.items()
        ]
        + [
            pl.DataFrame({"retriever": name, "query_id": qids, "measure": "RR", "value": h * 0.5})
            for name, h in hits.items()
        ]
    )
    table = pairwise_significance(
        per_query, ["Success@5", "RR"], ["a", "b", "c"], n_resamples=1000, seed=1, binary_measures={"Success@5"}
    )
    assert table.height == 6
    assert table.filter(pl.col("measure") == "Success@5").select("retriever_a", "retriever_b").rows() == [
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
    ]
    hr = table.filter(pl.col("measure") == "Success@5")
    assert hr["p_mcnemar_holm"].to_list() == pytest.approx(holm(hr["p_mcnemar"].to_list()))
    assert hr["p_randomization_holm"].to_list() == pytest.approx(holm(hr["p_randomization"].to_list()))
    ab = hr.row(0, named=True)
    assert ab["only_a"] == int(np.sum(hits["a"] & ~hits["b"])) and ab["only_b"] == int(np.sum(~hits["a"] & hits["b"]))
    assert ab["diff"] == pytest.approx(hits["a"].mean() - hits["b"].mean())
    rr = table.filter(pl.col("measure") == "RR")
    assert rr["p_mcnemar"].null_count() == 3  # McNemar only for 0/1 measures


def test_missing_queries_are_an_error():
    per_query = pl.DataFrame(
        {"retriever": ["a", "a", "b"], "query_id": ["q1", "q2", "q1"], "measure": "RR", "value": [1.0, 0.5, 1.0]}
    )
    with pytest.raises(ValueError, match="same queries"):
        pairwise_significance(per_query, ["RR"], ["a", "b"], n_resamples=100, binary_measures=set())


def test_resamples_go_in_batches_that_shrink_with_the_queries_and_give_the_unbatched_statistics(monkeypatch):
    from mama_pipeline.evaluation import _significance as significance

    assert (batch_for(1_000), batch_for(100_000), batch_for(10**8)) == (4_000, 40, 1)
    monkeypatch.setattr(significance, "ELEMENTS_PER_CALL", 30_000)  # 10 resamples per call for 3,000 queries
    rng = np.random.default_rng(8)
    a, b = rng.random(3000), rng.random(3000)

    def diff(x, y, axis):
        return np.mean(x - y, axis=axis)

    ref = stats.bootstrap(
        (a, b), diff, paired=True, vectorized=True, n_resamples=300, method="BCa", rng=np.random.default_rng(4)
    ).confidence_interval
    assert paired_bootstrap_ci(a, b, 300, 4) == (ref.low, ref.high)
    ref = stats.bootstrap((a,), np.mean, vectorized=True, n_resamples=300, method="BCa", rng=np.random.default_rng(4))
    assert bootstrap_mean_ci(a, 300, 4) == (ref.confidence_interval.low, ref.confidence_interval.high)
    ref = stats.permutation_test(
        (a, b), diff, permutation_type="samples", vectorized=True, n_resamples=300, rng=np.random.default_rng(4)
    )
    batches = []
    original = significance._flip_batches

    def spy(rng, n, n_resamples, batch):
        batches.append(batch)
        return original(rng, n, n_resamples, batch)

    monkeypatch.setattr(significance, "_flip_batches", spy)
    significance._KEPT.clear()
    assert paired_randomization_p(a, b, 300, 4) == ref.pvalue
    assert batches == [10]  # 300 sign-flip resamples, 10 per batch
    assert sign_flip_p(a - b, 300, np.random.default_rng(4), 7) == ref.pvalue  # any batch: the same signs


def test_refused_rows_counts_the_rows_whose_figures_were_refused():
    from mama_pipeline.evaluation._significance import refused_rows

    table = pl.DataFrame(
        {"refused": [None, "interval: 3 values, fewer than the 30", None]}, schema={"refused": pl.String}
    )
    assert refused_rows(table) == "1 of 3 rows"
    assert refused_rows(table.clear()) == "0 of 0 rows"
    assert refused_rows(pl.DataFrame({"x": [1]}), "interval_refused") == "0 of 1 rows"


def test_figures_of_one_seed_and_size_in_a_row_each_equal_scipy_on_draws_made_once(monkeypatch):
    """The draws kept from the first figure serve the next ones (other values, same seed and size), and each
    figure still equals scipy's on a fresh generator of that seed; another size or seed draws anew."""
    from mama_pipeline.evaluation import _significance as significance

    significance._KEPT.clear()
    drawn = []
    original = significance._index_batches
    monkeypatch.setattr(significance, "_index_batches", lambda *a: drawn.append(a[1:3]) or original(*a))
    rng = np.random.default_rng(21)
    hits = [(rng.random(400) < p).astype(float) for p in (0.3, 0.5, 0.7)]  # 0/1: the int8 gathers
    graded = [rng.random(400) ** k for k in (1, 2)]

    def diff(x, y, axis):
        return np.mean(x - y, axis=axis)

    for values in [*hits, *graded]:
        ref = stats.bootstrap(
            (values,), np.mean, vectorized=True, n_resamples=500, method="BCa", rng=np.random.default_rng(6)
        )
        assert bootstrap_mean_ci(values, 500, 6) == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    for a, b in itertools.combinations([*hits, *graded], 2):
        ref = stats.bootstrap(
            (a, b), diff, paired=True, vectorized=True, n_resamples=500, method="BCa", rng=np.random.default_rng(6)
        ).confidence_interval
        assert paired_bootstrap_ci(a, b, 500, 6) == pytest.approx((ref.low, ref.high), rel=1e-12)
        ref = stats.permutation_test(
            (a, b), diff, permutation_type="samples", vectorized=True, n_resamples=500, rng=np.random.default_rng(6)
        )
        assert paired_randomization_p(a, b, 500, 6) == ref.pvalue
    assert drawn == [(400, 500)]  # one draw of the rows for 5 intervals and 10 paired ones
    short = graded[0][:100]
    ref = stats.bootstrap(
        (short,), np.mean, vectorized=True, n_resamples=500, method="BCa", rng=np.random.default_rng(7)
    )
    assert bootstrap_mean_ci(short, 500, 7) == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert drawn == [(400, 500), (100, 500)]


@pytest.mark.parametrize("seed", [0, 5])
def test_sign_flips_of_whole_number_differences_mostly_zero_give_scipys_p_bit_for_bit(seed):
    """0/1 hits and graded counts differ on few queries: only those pairs' flips are summed (exact for whole
    numbers); the p is scipy's permutation_test's, with its tolerance, on the same generator."""
    rng = np.random.default_rng(seed)
    a = (rng.random(900) < 0.4).astype(float)
    b = np.where(rng.random(900) < 0.8, a, 1 - a)  # 80% of the queries tie
    graded_a = rng.integers(0, 4, 900).astype(float)
    graded_b = np.where(rng.random(900) < 0.9, graded_a, rng.integers(0, 4, 900))

    def diff(x, y, axis):
        return np.mean(x - y, axis=axis)

    for x, y in ((a, b), (graded_a, graded_b)):
        want = stats.permutation_test(
            (x, y), diff, permutation_type="samples", vectorized=True, n_resamples=999, rng=np.random.default_rng(seed)
        )
        assert paired_randomization_p(x, y, 999, seed) == want.pvalue
        assert sign_flip_p(x - y, 999, np.random.default_rng(seed), 100) == want.pvalue
