"""One track's board: tied groups and Holm across the board, with expectations from scipy and statsmodels directly."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from mama_pipeline.leaderboard.board import Entry, Stats, build_track

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


def _values(arrays: dict[str, np.ndarray], measure: str = "nDCG@10") -> pl.DataFrame:
    return pl.DataFrame(
        [(e, q, measure, float(v)) for e, arr in arrays.items() for q, v in zip(QUERIES, arr)],
        schema=["entry_id", "query_id", "measure", "value"],
        orient="row",
    )


def _constructed() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 0.8, len(QUERIES))
    return {
        "configured/a": base + 0.1,  # the best
        "configured/b": base + 0.1 + rng.normal(0, 0.02, len(QUERIES)),  # a with symmetric noise: not separable
        "configured/c": base - 0.15 + rng.normal(0, 0.02, len(QUERIES)),  # clearly worse on every query
        "submission/s1": base + 0.1 + rng.normal(0, 0.02, len(QUERIES)),  # a submission like b
    }


def test_tied_group_and_holm_across_every_pair_of_the_board():
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
    best = max(means, key=means.get)
    expected = {best: "best"}
    for e in arrays:
        if e != best:
            p = adjusted[tuple(sorted((e, best)))]
            expected[e] = "tied with best" if p >= STATS.alpha else "below best"
    standing = dict(table.select("entry_id", "standing").iter_rows())
    assert standing == expected
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
    assert row["p_holm_vs_best"] == pytest.approx(adjusted[tuple(sorted(("configured/c", best)))], abs=1e-12)


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
    assert rows["submission/lone"]["n_shared_with_best"] == 1 and rows["submission/lone"]["p_holm_vs_best"] is None
    assert rows["configured/a"]["standing"] == "best"
    assert "submission/bad" not in set(comps["entry_a"]) | set(comps["entry_b"])
    lone = comps.filter(pl.col("entry_b") == "submission/lone")
    assert lone["n_shared"].to_list() == [1, 1] and lone["p_holm"].null_count() == 2


def test_robustness_entries_are_the_variant_side_of_the_robustness_areas_values_keyed_by_variant_id():
    from mama_pipeline.evaluation.settings import EvaluationSettings
    from mama_pipeline.leaderboard.leaderboard_inputs import configured, robustness_per_query
    from mama_pipeline.robustness.robustness_scoreboard import labels_in
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


def test_entries_sharing_the_top_mean_are_all_best():
    same = np.linspace(0.1, 0.9, len(QUERIES))
    arrays = {"configured/x": same, "configured/y": same[::-1].copy(), "configured/z": same - 0.05}
    table, _ = build_track(
        "main", [Entry(e, "configured", e[11:]) for e in arrays], _values(arrays), ["nDCG@10"], set(), STATS
    )
    standing = dict(table.select("entry_id", "standing").iter_rows())
    assert standing["configured/x"] == standing["configured/y"] == "best"  # equal means: no order between them
    assert standing["configured/z"] in ("tied with best", "below best")
