"""One track's board: the pairwise matrix (Holm across the board) and the standings (step-down range permutation
test), with expectations from scipy and statsmodels directly; boards of 8 and 20 entries that separate the weak
ones, and boards too small to separate anything that say so."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from mama_pipeline.leaderboard._board import Entry, Stats, build_track

STATS = Stats(resamples=999, seed=0, confidence=0.95, alpha=0.05)
QUERIES = [f"q_{i:03d}" for i in range(30)]


def _scipy_p(a: np.ndarray, b: np.ndarray) -> float:
    """The paired randomization test as scipy runs it: sign flips within queries, two-sided, seeded."""
    from scipy import stats

    return float(
        stats.permutation_test(
            (a, b),
            lambda x, y, axis=-1: np.mean(x - y, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=STATS.resamples,
            alternative="two-sided",
            batch=1000,
            rng=np.random.default_rng(STATS.seed),
        ).pvalue
    )


def _values(arrays: dict[str, np.ndarray], measure: str = "nDCG@10", queries: list[str] = QUERIES) -> pl.DataFrame:
    return pl.DataFrame(
        [(e, q, measure, float(v)) for e, arr in arrays.items() for q, v in zip(queries, arr)],
        schema=["entry_id", "query_id", "measure", "value"],
        orient="row",
    )


def _range(*samples, axis=-1):
    means = np.stack([np.mean(s, axis=axis) for s in samples])
    return means.max(axis=0) - means.min(axis=0)


def _scipy_step_down(arrays: dict[str, np.ndarray], resamples: int, alpha: float) -> dict[str, tuple[str, float]]:
    """The standings as scipy's permutation_test gives them on complete, ungrouped values: the range of the
    entries' means, labels shuffled within each query; while p < alpha the lowest entry is below best."""
    from scipy import stats

    order = sorted(arrays, key=lambda e: (-arrays[e].mean(), e))
    out, p = {order[0]: ("best", None)}, 0.0
    while len(order) > 1:
        res = stats.permutation_test(
            tuple(arrays[e] for e in order),
            _range,
            permutation_type="samples",
            vectorized=True,
            n_resamples=resamples,
            alternative="greater",
            rng=np.random.default_rng(STATS.seed),
        )
        p = max(p, float(res.pvalue))
        if p >= alpha:
            out.update({e: ("tied with best", p) for e in order[1:]})
            break
        out[order.pop()] = ("below best", p)
    return out


def _constructed() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 0.8, len(QUERIES))
    return {
        "configured/a": base + 0.1,  # the best
        "configured/b": base + 0.1 + rng.normal(0, 0.02, len(QUERIES)),  # a with symmetric noise: not separable
        "configured/c": base - 0.15 + rng.normal(0, 0.02, len(QUERIES)),  # clearly worse on every query
        "submission/s1": base + 0.1 + rng.normal(0, 0.02, len(QUERIES)),  # a submission like b
    }


def test_pairwise_matrix_holm_across_every_pair_and_standings_from_the_step_down_range_test():
    arrays = _constructed()
    entries = [Entry(e, e.split("/")[0], e.split("/")[1]) for e in arrays]
    table, comps = build_track("main", entries, _values(arrays), ["nDCG@10"], set(), STATS)
    from statsmodels.stats.multitest import multipletests

    pairs = list(itertools.combinations(sorted(arrays), 2))
    raw = [_scipy_p(arrays[a], arrays[b]) for a, b in pairs]
    adjusted = dict(zip(pairs, multipletests(raw, method="holm")[1]))
    got = {(r["entry_a"], r["entry_b"]): r for r in comps.iter_rows(named=True)}
    assert set(got) == set(pairs) and all(got[p]["n_shared"] == len(QUERIES) for p in pairs)
    for pair, p in zip(pairs, raw):
        assert got[pair]["p_randomization"] == pytest.approx(p, abs=1e-12)
        assert got[pair]["p_holm"] == pytest.approx(adjusted[pair], abs=1e-12)  # Holm over all six pairs, not one
    means = {e: float(v.mean()) for e, v in arrays.items()}
    expected = _scipy_step_down(arrays, STATS.resamples, STATS.alpha)
    standing = dict(table.select("entry_id", "standing").iter_rows())
    assert standing == {e: s for e, (s, _) in expected.items()}
    # the construction: b and the submission cannot be told apart from a; c is clearly worse
    assert sorted(e for e, s in standing.items() if s in ("best", "tied with best")) == [
        "configured/a",
        "configured/b",
        "submission/s1",
    ]
    assert standing["configured/c"] == "below best"
    row = table.filter(pl.col("entry_id") == "configured/c").row(0, named=True)
    assert row["n"] == len(QUERIES) and row["mean"] == pytest.approx(means["configured/c"])
    assert row["ci_low"] < row["mean"] < row["ci_high"]
    assert row["p_vs_best"] == pytest.approx(expected["configured/c"][1], abs=1e-12)
    # four entries, 30 queries, 999 resamples: the smallest attainable p is 1 / 1000
    assert (row["standing_entries"], row["standing_units"], row["standing_resamples"]) == (4, 30, 999)
    assert row["p_floor"] == pytest.approx(1 / 1000)


def test_refused_entry_has_no_figure_and_too_few_shared_queries_are_not_compared():
    arrays = _constructed()
    values = _values({k: arrays[k] for k in ("configured/a", "configured/c")})
    # one query only, shared with the others: no paired test with the best, so no order is implied
    values = pl.concat(
        [
            values,
            pl.DataFrame([("submission/lone", QUERIES[0], "nDCG@10", 0.1)], schema=values.columns, orient="row"),
            # values of a refused entry are never used
            pl.DataFrame([("submission/bad", q, "nDCG@10", 1.0) for q in QUERIES], schema=values.columns, orient="row"),
        ]
    )
    entries = [
        Entry("configured/a", "configured", "a"),
        Entry("configured/c", "configured", "c"),
        Entry("submission/lone", "submission", "lone"),
        Entry("submission/bad", "submission", "bad", refused="judge failed on 40 of 200 holes"),
    ]
    table, comps = build_track("main", entries, values, ["nDCG@10"], set(), STATS)
    rows = {r["entry_id"]: r for r in table.iter_rows(named=True)}
    assert rows["submission/bad"]["standing"] == "refused" and rows["submission/bad"]["mean"] is None
    assert rows["submission/bad"]["refused"] == "judge failed on 40 of 200 holes"
    assert rows["submission/lone"]["standing"] == "not compared with best"
    assert rows["submission/lone"]["n_shared_with_best"] == 1 and rows["submission/lone"]["p_vs_best"] is None
    assert rows["configured/a"]["standing"] == "best"
    assert "submission/bad" not in set(comps["entry_a"]) | set(comps["entry_b"])
    lone = comps.filter(pl.col("entry_b") == "submission/lone")
    assert lone["n_shared"].to_list() == [1, 1] and lone["p_holm"].null_count() == 2


def test_robustness_entries_are_the_variant_side_of_the_robustness_areas_values_keyed_by_variant_id():
    from mama_pipeline.evaluation.settings import EvaluationSettings
    from mama_pipeline.leaderboard._leaderboard_inputs import configured, robustness_per_query
    from mama_pipeline.robustness._robustness_scoreboard import labels_in
    from mama_pipeline_tests.robustness.test_labels_and_board import (
        frame,
        label_rows,
        labels_of,
        paired,
        ranking,
        variants,
    )

    v = variants().filter(pl.col("parent_id").is_in(["q_00001", "q_00002"]) & (pl.col("kind") == "typo"))
    judgments = label_rows([("q_00001", "a", 6), ("q_00001", "b", 0), ("q_00002", "a", 6), ("q_00002", "b", 0)])
    clean = frame(ranking("q_00001", "bm25", ["a", "b"]) + ranking("q_00002", "bm25", ["b", "a"]))
    variant = frame(ranking("q_00001~typo", "bm25", ["a", "x"]))  # q_00002~typo: an empty ranking
    s = EvaluationSettings(cutoffs=[1, 2], significance_measures=["Success(rel=3)@1"], resamples=200)
    pairs = paired(clean, variant, v, labels_in(labels_of(v, judgments, label_rows([]))), s, 2, also=("Judged@1",))
    with pytest.raises(ValueError, match=r"no values of \['nDCG@10'\]"):
        robustness_per_query(pairs, v, ["Success(rel=3)@1", "nDCG@10"])
    values = robustness_per_query(pairs, v, ["Success(rel=3)@1", "Judged@1"]).sort("query_id", "measure")
    assert values.rows() == [
        ("bm25", "q_00001~typo", "Judged@1", 1.0),
        ("bm25", "q_00001~typo", "Judged@2", 0.5),
        ("bm25", "q_00001~typo", "Success(rel=3)@1", 1.0),
        # an empty ranking scores 0 and has no label coverage at all
        ("bm25", "q_00002~typo", "Judged@1", None),
        ("bm25", "q_00002~typo", "Judged@2", None),
        ("bm25", "q_00002~typo", "Success(rel=3)@1", 0.0),
    ]
    got = configured(values, "retriever")
    table, _ = build_track(
        "robustness",
        got.entries,
        got.values.filter(pl.col("value").is_not_null()),
        ["Success(rel=3)@1"],
        {"Success(rel=3)@1"},
        STATS,
        {"Success(rel=3)@1": "Judged@1"},
    )
    row = table.row(0, named=True)
    assert (row["entry_id"], row["n"], row["mean"]) == ("configured/bm25", 2, 0.5)
    assert (row["judged_measure"], row["judged_n"], row["judged_mean"]) == ("Judged@1", 1, 1.0)


def test_one_best_among_equal_means_the_other_is_tied_with_it():
    """One best (the first entry id among equal means); the other, tested like every entry, is tied with it: the
    headline then reads "1 tied with best", never two bests and "0 tied"."""
    same = np.linspace(0.1, 0.9, len(QUERIES))
    arrays = {"configured/x": same, "configured/y": same[::-1].copy(), "configured/z": same - 0.05}
    table, _ = build_track(
        "main", [Entry(e, "configured", e[11:]) for e in arrays], _values(arrays), ["nDCG@10"], set(), STATS
    )
    standing = dict(table.select("entry_id", "standing").iter_rows())
    assert standing["configured/x"] == "best"
    assert standing["configured/y"] == "tied with best"  # equal means: no order between them
    assert standing["configured/z"] in ("tied with best", "below best")


def _board(arrays: dict[str, np.ndarray], queries: list[str], stats: Stats = STATS) -> dict[str, dict]:
    entries = [Entry(e, "configured", e.split("/")[1]) for e in arrays]
    table, _ = build_track("main", entries, _values(arrays, queries=queries), ["nDCG@10"], set(), stats)
    return {r["entry_id"]: r for r in table.iter_rows(named=True)}


@pytest.mark.parametrize(
    ("k", "binary", "low", "high"), [(8, True, 0.07, 0.887), (8, False, 0.07, 0.887), (20, False, 0.1, 0.9)]
)
def test_boards_of_8_and_20_entries_on_300_queries_place_the_weak_ones_below_best(k, binary, low, high):
    """Before: Holm over every pair at R = 1000 made every entry "tied with best" (8 entries: 28 x 2/1001 > 0.05)."""
    queries = [f"q_{i:03d}" for i in range(300)]
    rng = np.random.default_rng(11)
    means = np.linspace(low, high, k)
    if binary:
        arrays = {f"configured/e{i:02d}": (rng.random(300) < m).astype(float) for i, m in enumerate(means)}
    else:
        difficulty = rng.normal(0, 0.1, 300)
        arrays = {
            f"configured/e{i:02d}": np.clip(m + difficulty + rng.normal(0, 0.15, 300), 0, 1)
            for i, m in enumerate(means)
        }
    rows = _board(arrays, queries, Stats(resamples=1000, seed=0, confidence=0.95, alpha=0.05))
    best = max(arrays, key=lambda e: arrays[e].mean())
    assert rows[best]["standing"] == "best"
    weak = [e for e in arrays if arrays[e].mean() < arrays[best].mean() - 0.2]
    assert len(weak) >= k // 2
    assert all(rows[e]["standing"] == "below best" for e in weak), {e: rows[e]["standing"] for e in weak}
    assert all(rows[e]["p_vs_best"] < 0.05 for e in weak)
    assert rows[best]["p_floor"] == pytest.approx(1 / 1001) and rows[best]["standing_entries"] == k


def test_a_board_too_small_to_separate_says_so():
    """Two entries on four queries: the exact test's smallest p is 2 / 2^4 = 0.125 > 0.05, so even an entry worse on
    every query cannot be placed below the best; the board says "not separable at this n", not "tied"."""
    queries = QUERIES[:4]
    rows = _board({"configured/a": np.array([0.9, 0.8, 0.7, 0.9]), "configured/b": np.zeros(4)}, queries)
    assert rows["configured/b"]["standing"] == "not separable at this n"
    assert rows["configured/b"]["p_floor"] == pytest.approx(0.125)
    assert rows["configured/b"]["p_vs_best"] == pytest.approx(0.125)  # scipy enumerates the 16 sign patterns
    # three entries on the same four queries can separate the worst (floor (3!)^-3), not the closest one
    rows = _board(
        {
            "configured/a": np.array([0.9, 0.8, 0.7, 0.9]),
            "configured/b": np.array([0.5, 0.4, 0.4, 0.5]),
            "configured/c": np.zeros(4),
        },
        queries,
        Stats(resamples=20_000, seed=0, confidence=0.95, alpha=0.05),
    )
    assert rows["configured/a"]["p_floor"] == pytest.approx(max(1 / 20_001, 6.0**-3))
    assert rows["configured/c"]["standing"] == "below best"
    assert rows["configured/b"]["standing"] == "not separable at this n"


def test_standing_p_of_two_entries_is_the_exact_sign_flip_p_of_scipy():
    """Two entries, 12 queries: the range of two means is |mean difference|; scipy enumerates the 4096 sign
    flips (2^12 <= the resamples), the two-sided paired randomization p."""
    from scipy import stats

    rng = np.random.default_rng(3)
    a, b = rng.uniform(0, 1, 12), rng.uniform(0, 1, 12) - 0.3
    rows = _board({"configured/a": a, "configured/b": b}, QUERIES[:12], Stats(5000, 0, 0.95, 0.05))
    want = stats.permutation_test(
        (a, b),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=5000,
        alternative="two-sided",
    ).pvalue
    assert rows["configured/b"]["p_vs_best"] == pytest.approx(want, abs=1e-12)
    assert rows["configured/a"]["p_floor"] == pytest.approx(2 / 4096)


def test_the_json_and_the_page_say_when_no_entry_can_be_separated():
    """Two entries on four queries: leaderboard.json's standings say not separable with the smallest attainable p
    (0.125), the page says no entry can be placed below the best, and the headline figure does not count ties."""
    import json

    from mama_pipeline.leaderboard._leaderboard_files import folder_files

    queries = QUERIES[:4]
    arrays = {"configured/a": np.array([0.9, 0.8, 0.7, 0.9]), "configured/b": np.zeros(4)}
    entries = [Entry(e, "configured", e[11:]) for e in arrays]
    values = _values(arrays, queries=queries)
    table, comps = build_track("main", entries, values, ["nDCG@10"], set(), STATS)
    per_query = values.with_columns(pl.lit("main").alias("track"), pl.lit("public").alias("part"))
    facts = {"alpha": 0.05, "statistics": "s", "measures": {"main": ["nDCG@10"]}}
    files = folder_files("mamaretrieval", {"main": ["nDCG@10"]}, table, comps, per_query, facts)
    doc = json.loads(files["leaderboard.json"])
    standing = doc["tracks"][0]["standings"]["nDCG@10"]
    assert standing["separable"] is False and standing["smallest_attainable_p"] == pytest.approx(0.125)
    assert (standing["entries_tested"], standing["units"], standing["resamples"]) == (2, 4, 999)
    assert "no entry can be placed below the best at this n" in standing["note"]
    page = files["leaderboard.html"].decode()
    assert "no entry can be placed below the best at this n" in page
    assert standing["note"].startswith("4 query units and 2 entries") and "With 2 entries on 4 query units and" in page
    tex = files["manuscript/mamaretrieval_main.tex"].decode()  # its intervals are refused: the caption says why
    # each cell a mark, the reason once in the caption with its count (2 entries x 1 measure)
    assert tex.count("(no interval\\textsuperscript{1})") == 2
    assert tex.count("fewer than the 30") == 1 and "interval refused for 2 cells: fewer than the 30 values" in tex
    assert page.count("fewer than the 30") == 1  # on the page too: under the headline only
    assert "too few units to separate any entry; 2 entries" in page
    assert "0.125" in page


def test_a_refused_statistic_leaves_its_figure_empty_with_the_reason_and_the_board_goes_on(monkeypatch):
    from mama_pipeline.evaluation._significance import StatisticRefused
    from mama_pipeline.leaderboard import _board as board

    def refuse(*args, **kwargs):
        raise StatisticRefused("all values equal: no spread to resample")

    monkeypatch.setattr(board, "pairwise_significance", refuse)
    monkeypatch.setattr(board, "bootstrap_mean_ci", refuse)
    arrays = _constructed()
    # one entry with a single value: no interval, the refusal's reason instead
    values = pl.concat(
        [
            _values(arrays),
            pl.DataFrame(
                [("submission/one", QUERIES[0], "nDCG@10", 0.5)],
                schema=["entry_id", "query_id", "measure", "value"],
                orient="row",
            ),
        ]
    )
    entries = [Entry(e, e.split("/")[0], e.split("/")[1]) for e in [*arrays, "submission/one"]]
    table, comps = build_track("main", entries, values, ["nDCG@10"], set(), STATS)
    rows = {r["entry_id"]: r for r in table.iter_rows(named=True)}
    assert rows["configured/a"]["ci_low"] is None
    assert rows["configured/a"]["ci_note"] == "all values equal: no spread to resample"
    # one value goes to the interval like any other (its own refusal: here the stand-in's reason), with its mean
    assert rows["submission/one"]["ci_note"] == "all values equal: no spread to resample"
    assert rows["submission/one"]["mean"] == 0.5 and rows["submission/one"]["ci_low"] is None
    compared = comps.filter(pl.col("n_shared") >= 2)
    assert compared.height == 6 and set(compared["refused"]) == {"all values equal: no spread to resample"}
    assert compared["p_randomization"].null_count() == 6
    assert rows["configured/c"]["standing"] == "below best"  # the standings do not depend on the refused figures


@pytest.mark.parametrize(
    ("entries", "units", "resamples", "seed", "complete"),
    [
        (2, 40, 199, 11, False),
        (5, 300, 999, 11, False),
        (4, 20_000, 199, 11, False),
        (3, 40, 5000, 0, False),
        (3, 2, 5, 11, False),
        (5, 300, 999, 11, True),
        (4, 20_000, 199, 11, True),
        (6, 3000, 999, 3, True),
    ],
    ids=[
        "two entries",  # p 0.84
        "one batch",  # p 0.91
        "four batches, the last partial",  # p 0.28
        "p 268 / 5001: complex division, not 268 / 5001 in float",
        "exact: every relabelling",  # p 0.67
        "one batch, every unit's counts alike",
        "four batches, every unit's counts alike",
        "six entries, 3000 units, every unit's counts alike",
    ],
)
def test_range_p_is_scipys_permutation_test_bit_for_bit(entries, units, resamples, seed, complete):
    """range_p gathers every unit's relabelling at once; the p is scipy's on the same seed and batch, with missing
    values (a count of 0) and graded sums, or with every entry's count alike in each unit (a query's one value
    per entry, a parent's variants: only the sums are gathered)."""
    from scipy import stats

    from mama_pipeline.leaderboard._board_standings import range_p

    rng = np.random.default_rng(units)
    counts = rng.integers(0, 3, (entries, units))
    if complete:
        counts = np.tile(rng.integers(1, 4, units), (entries, 1))
    totals = np.where(counts > 0, rng.exponential(0.4, (entries, units)) * counts, 0.0)
    totals[0] += counts[0] / np.sqrt(units)  # the first entry a little ahead: p inside (0, 1)
    matrix = totals + 1j * counts

    def range_of_means(*samples, axis=-1):
        s = np.stack(samples)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = s.real.sum(axis=axis) / s.imag.sum(axis=axis)
        return np.nanmax(means, axis=0) - np.nanmin(means, axis=0)

    want = stats.permutation_test(
        tuple(matrix),
        range_of_means,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        alternative="greater",
        batch=max(1, 4_000_000 // matrix.size),
        rng=np.random.default_rng(seed),
    )
    assert range_p(matrix, resamples, seed) == float(np.real(want.pvalue))
