"""The held-out gap test keeps its promise: under a true null (nothing leaked) it rejects at most alpha + 2 standard
errors of the time, grouped items (variants of one parent query) included, and it finds a planted gap.

The replicates go through :func:`part_gaps` with the real hash rule: each replicate is one ``by`` group, its ids
``r<replicate>p<parent>~<variant>`` hashed on the parent (the key a robustness variant is split by)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from mama_pipeline.common.held_out import HeldOutRule
from mama_pipeline.evaluation._held_out_gaps import grouped_gap, part_gaps

ALPHA = 0.05
PARENT = pl.col("query_id").str.replace(r"~.*$", "")  # a variant's parent query: the id the rule hashes
RULE = HeldOutRule(0.3, "calibration", "query_id")


def _frame(values: np.ndarray) -> pl.DataFrame:
    """``values`` (replicates x parents x variants) as part_gaps' input, one replicate per ``rep``."""
    reps, parents, variants = values.shape
    r, p, v = np.meshgrid(np.arange(reps), np.arange(parents), np.arange(variants), indexing="ij")
    ids = [f"r{a}p{b}~{c}" for a, b, c in zip(r.ravel(), p.ravel(), v.ravel())]
    return pl.DataFrame({"rep": r.ravel(), "query_id": ids, "value": values.ravel()})


def _rejections(values: np.ndarray, key: pl.Expr | None, shift: float = 0.0) -> tuple[float, int]:
    frame = _frame(values)
    if shift:  # a planted gap: the public parents score ``shift`` higher
        public = ~np.array([RULE.is_held_out(i) for i in frame.select(PARENT).to_series().to_list()])
        frame = frame.with_columns(pl.col("value") + pl.Series(public * shift))
    board = part_gaps(frame, ["rep"], "query_id", RULE, 199, 0, key=key)  # any count keeps alpha
    p = board["p_permutation"].drop_nulls().to_numpy()
    return float((p <= ALPHA).mean()), p.size


def _bound(n: int) -> float:
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / n)


def _near_identical(rng, reps: int, parents: int, variants: int) -> np.ndarray:
    base = rng.uniform(0, 1, (reps, parents, 1))
    return np.clip(base + rng.normal(0, 0.02, (reps, parents, variants)), 0, 1)


def test_grouped_null_300_parents_x_3_variants_rejects_at_most_alpha_plus_two_se():
    # nothing leaked: every parent's three near-identical variants fall on the parent's side. Permuting rows one by
    # one (the code before) rejected about a quarter of these nulls; whole parents permuted keep alpha.
    rng = np.random.default_rng(46)
    rate, n = _rejections(_near_identical(rng, 800, 300, 3), PARENT)
    assert n == 800
    assert rate <= _bound(n), f"{rate:.3f} of {n} true nulls rejected at {ALPHA}"


def test_grouped_zero_one_values_with_ties_keep_alpha():
    # 0/1 values, most tied, the three variants of a parent equal but for a rare flip
    rng = np.random.default_rng(7)
    base = (rng.uniform(0, 1, (800, 300, 1)) < 0.3).astype(float)
    flip = rng.uniform(0, 1, (800, 300, 3)) < 0.05
    rate, n = _rejections(np.abs(base - flip), PARENT)
    assert n == 800 and rate <= _bound(n)


def test_ungrouped_skewed_values_keep_alpha():
    # every query its own key: skewed (reciprocal-rank-like) values, many ties at 0
    rng = np.random.default_rng(3)
    values = np.where(rng.uniform(0, 1, (800, 300, 1)) < 0.4, 0.0, 1 / rng.integers(1, 11, (800, 300, 1)))
    rate, n = _rejections(values, None)
    assert n == 800 and rate <= _bound(n)


def test_a_planted_gap_of_0_15_is_found_in_nine_of_ten_replicates():
    # public parents 0.15 higher (a leak), values uniform (sd 0.29), 300 parents x 3 variants, share 0.3
    rng = np.random.default_rng(11)
    rate, n = _rejections(_near_identical(rng, 200, 300, 3), PARENT, shift=0.15)
    assert n == 200 and rate >= 0.9, f"power {rate:.3f}"


def test_ungrouped_p_is_scipys_permutation_test_of_the_rows():
    from scipy import stats

    rng = np.random.default_rng(5)
    frame = _frame(rng.uniform(0, 1, (1, 40, 1)))
    row = part_gaps(frame, ["rep"], "query_id", RULE, 999, 3).row(0, named=True)
    held = np.array([RULE.is_held_out(i) for i in frame["query_id"]])
    v = frame["value"].to_numpy()
    want = stats.permutation_test(
        (v[~held], v[held]),
        lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        permutation_type="independent",
        vectorized=True,
        n_resamples=999,
        rng=np.random.default_rng(3),
    ).pvalue
    assert row["p_permutation"] == pytest.approx(want, abs=1e-12)
    assert (row["groups_public"], row["groups_held_out"]) == (row["n_public"], row["n_held_out"])


def _salted(parents: int, held: int) -> tuple[str, list[str]]:
    """A salt under which exactly the first ``held`` of ``parents`` parent ids are held out at share 0.5."""
    ids = [f"p{i}" for i in range(parents)]
    for k in range(2000):
        rule = HeldOutRule(0.5, f"s{k}", "query_id")
        if [rule.is_held_out(i) for i in ids] == [True] * held + [False] * (parents - held):
            return f"s{k}", ids
    raise AssertionError("no salt")


def test_grouped_exact_p_by_hand_moves_whole_parents():
    # 4 parents (2 held out), two variants each: C(4, 2) = 6 arrangements of the parents, enumerated.
    salt, parents = _salted(4, 2)
    ids = [f"{p}~{v}" for p in parents for v in ("a", "b")]
    values = [0.0, 0.0, 0.1, 0.1, 1.0, 1.0, 0.9, 0.9]  # held out: p0, p1 (low); public: p2, p3 (high)
    frame = pl.DataFrame({"rep": [0] * 8, "query_id": ids, "value": values})
    row = part_gaps(frame, ["rep"], "query_id", HeldOutRule(0.5, salt, "query_id"), 999, 0, key=PARENT).row(
        0, named=True
    )
    assert (row["n_public"], row["n_held_out"], row["groups_public"], row["groups_held_out"]) == (4, 4, 2, 2)
    assert row["gap"] == pytest.approx(0.9)
    # parent means 0, 0.1, 1, 0.9: only the observed split and its mirror reach |diff| >= 0.9: p = 2 x 1/6
    assert row["p_permutation"] == pytest.approx(1 / 3)
    assert "smallest attainable p is 0.333" in row["note"]


@pytest.mark.parametrize(("parents", "held"), [(2, 1), (3, 1), (3, 2)])
def test_two_or_three_parents_are_refused_with_the_reason(parents, held):
    salt, ids = _salted(parents, held)
    frame = pl.DataFrame(
        {"rep": [0] * 3 * parents, "query_id": [f"{p}~{v}" for p in ids for v in "abc"], "value": [0.5] * 3 * parents}
    )
    row = part_gaps(frame, ["rep"], "query_id", HeldOutRule(0.5, salt, "query_id"), 999, 0, key=PARENT).row(
        0, named=True
    )
    assert row["p_permutation"] is None and row["gap"] is None
    assert "fewer than 2 groups" in row["note"] and row["n_public"] + row["n_held_out"] == 3 * parents


def test_all_equal_values_give_p_one():
    salt, parents = _salted(6, 3)
    frame = pl.DataFrame({"rep": [0] * 12, "query_id": [f"{p}~{v}" for p in parents for v in "ab"], "value": 1.0})
    row = part_gaps(frame, ["rep"], "query_id", HeldOutRule(0.5, salt, "query_id"), 999, 0, key=PARENT).row(
        0, named=True
    )
    assert row["gap"] == 0.0 and row["p_permutation"] == 1.0


@pytest.mark.parametrize(
    ("values", "groups", "held", "note"),
    [
        ([], [], [], "no held-out item"),
        ([1.0], ["a"], [True], "fewer than 2 groups"),
        ([1.0, 0.0], ["a", "a"], [True, True], "fewer than 2 groups"),
        ([1.0, 0.0, 1.0], ["a", "b", "c"], [False, False, False], "no held-out item"),
        ([0.0, 1.0, 0.0, 1.0], ["a", "b", "c", "d"], [True, True, False, False], "smallest attainable p is 0.333"),
    ],
)
def test_degenerate_inputs_give_a_reason_not_a_crash(values, groups, held, note):
    row = grouped_gap(np.array(values), np.array(groups, dtype=object), np.array(held, dtype=bool), 99, 0)
    assert note in row["note"]


def test_a_group_split_across_the_parts_is_an_error_naming_the_rule():
    with pytest.raises(ValueError, match="a group has items on both sides"):
        grouped_gap(np.array([1.0, 0.0, 1.0, 0.0]), np.array(list("aabc")), np.array([True, False, True, False]), 9, 0)
