"""Public vs held-out scoreboard figures, hand-checked on a tiny fixture."""

from __future__ import annotations

import hashlib

import polars as pl
import pytest

from mama_pipeline.common.held_out import HeldOutRule
from mama_pipeline.evaluation._held_out_gaps import part_gaps
from mama_pipeline.mamabench._held_out_key import split_key


def _held(i: str, salt: str, share: float = 0.5) -> bool:
    return int(hashlib.sha256(f"{salt}:{i}".encode()).hexdigest()[:16], 16) / 16**16 < share


def _ids_and_salt(n_public: int, n_held: int, key=lambda i: i, prefix: str = "q") -> tuple[list[str], list[str], str]:
    """A salt and ids of which exactly the first ``n_held`` are held out at share 0.5 (checked by the hash)."""
    for k in range(500):
        salt = f"s{k}"
        ids = [f"{prefix}{i}" for i in range(40)]
        held = [i for i in ids if _held(key(i), salt)][:n_held]
        public = [i for i in ids if not _held(key(i), salt)][:n_public]
        if len(held) == n_held and len(public) == n_public:
            return public, held, salt
    raise AssertionError("no salt")


def test_retriever_gap_and_unpaired_permutation_p_by_hand():
    public, held, salt = _ids_and_salt(3, 2)
    values = pl.DataFrame(
        {
            "retriever": ["bm25"] * 5,
            "measure": ["RR"] * 5,
            "query_id": public + held,
            "value": [1.0, 1.0, 0.0, 0.0, 0.0],
        }
    )
    board = part_gaps(values, ["retriever", "measure"], "query_id", HeldOutRule(0.5, salt, "query_id"), 1000, 0)
    row = board.row(0, named=True)
    assert (row["n_public"], row["n_held_out"]) == (3, 2)
    assert row["mean_public"] == pytest.approx(2 / 3) and row["mean_held_out"] == 0.0
    assert row["gap"] == pytest.approx(2 / 3)
    # exact over the 10 ways to choose the 2 held-out items of [1,1,0,0,0]: diff >= 2/3 in 3 of them (no 1 held),
    # diff <= 2/3 in all 10; two-sided p = 2 x min(3/10, 1) = 0.6
    assert row["p_permutation"] == pytest.approx(0.6)
    assert "independent" in row["test"] and "smallest attainable p is 0.2," in row["note"]  # 2 / 10 arrangements


def test_no_held_out_part_gives_no_figures_and_says_why():
    values = pl.DataFrame(
        {"retriever": ["bm25"] * 3, "measure": ["RR"] * 3, "query_id": ["a", "b", "c"], "value": [1.0, 0.0, 1.0]}
    )
    row = part_gaps(values, ["retriever", "measure"], "query_id", HeldOutRule(0.0, "x", "query_id"), 100, 0).row(
        0, named=True
    )
    assert row["n_held_out"] == 0 and row["gap"] is None and row["p_permutation"] is None
    assert "share is 0" in row["note"] and row["mean_public"] is None


def test_system_gap_uses_the_scoreboards_mean_and_the_healthbench_prompt_key():
    key = lambda i: "healthbench:" + i.split(":", 1)[1]  # noqa: E731
    public, held, salt = _ids_and_salt(2, 2, key, prefix="healthbench_consensus:p")
    grades = pl.DataFrame(
        {"system": ["a"] * 4, "track": ["rubric"] * 4, "item_id": public + held, "value": [1.5, 1.5, 0.25, 0.75]}
    )
    board = part_gaps(
        grades, ["system", "track"], "item_id", HeldOutRule(0.5, salt, "item_id"), 100, 0, key=split_key()
    )
    row = board.row(0, named=True)
    # rubric: the unclipped mean, as the scoreboard's mean and its comparisons: 1.5 public, (0.25 + 0.75) / 2 held out
    assert (row["mean_public"], row["mean_held_out"], row["gap"]) == (1.5, 0.5, 1.0)
    one = part_gaps(
        grades.head(3), ["system", "track"], "item_id", HeldOutRule(0.5, salt, "item_id"), 100, 0, key=split_key()
    ).row(0, named=True)
    assert one["n_held_out"] == 1 and one["gap"] is None and "fewer than 2" in one["note"]


def test_relative_gap_pairs_on_the_item_across_entries_by_hand():
    public, held, salt = _ids_and_salt(3, 2)
    items = public + held
    a = {"RR": [1.0, 1.0, 0.0, 0.0, 0.0], "nDCG": [1.0, 1.0, 1.0, 0.0, 0.0], "P@1": [1.0, 0.0, 1.0, 0.0, 1.0]}
    b = {"RR": [1.0, 0.0, 0.0, 0.0, 1.0], "nDCG": [1.0, 1.0, 1.0, 0.0, 0.0]}
    rows = [("a", m, i, v) for m, vs in a.items() for i, v in zip(items, vs)]
    rows += [("b", m, i, v) for m, vs in b.items() for i, v in zip(items, vs)]
    values = pl.DataFrame(rows, schema=["retriever", "measure", "query_id", "value"], orient="row")
    board = part_gaps(
        values, ["retriever", "measure"], "query_id", HeldOutRule(0.5, salt, "query_id"), 1000, 0, entry="retriever"
    )
    got = {(r["retriever"], r["measure"]): r for r in board.iter_rows(named=True)}
    # RR, a minus b per item: public (0, 1, 0), held (0, -1): relative gap 1/3 + 1/2 = 5/6. Exact over the 10 ways
    # to hold out 2 of (0, 1, 0, 0, -1): the held-out sum h gives a difference -5h/6; >= 5/6 when h = -1 (3 ways),
    # <= 5/6 always: two-sided p = 2 x 3/10 = 0.6. b is the mirror image.
    ra, rb = got[("a", "RR")], got[("b", "RR")]
    assert ra["relative_gap"] == pytest.approx(5 / 6) and ra["p_relative"] == pytest.approx(0.6)
    assert rb["relative_gap"] == pytest.approx(-5 / 6) and rb["p_relative"] == pytest.approx(0.6)
    assert ra["gap"] == pytest.approx(2 / 3) and rb["gap"] == pytest.approx(1 / 3 - 1 / 2)  # the unpaired gaps
    # nDCG: the held-out part is harder for both alike: each has a gap of 1, but no gap relative to the other
    for name in ("a", "b"):
        row = got[(name, "nDCG")]
        assert row["gap"] == 1.0 and row["relative_gap"] == 0.0 and row["p_relative"] == 1.0
    # P@1: b was not scored, so a has nothing to pair with
    lone = got[("a", "P@1")]
    assert lone["relative_gap"] is None and "no other retriever scored on the same items" in lone["relative_note"]
    assert lone["gap"] == pytest.approx(2 / 3 - 1 / 2)


def test_healthbench_items_of_one_prompt_are_one_group_of_the_test():
    # each prompt in two pools (consensus, hard): 2 items per prompt, one group per prompt
    key = lambda i: "healthbench:" + i.split(":", 1)[1]  # noqa: E731
    public, held, salt = _ids_and_salt(3, 2, key, prefix="healthbench_consensus:p")
    prompts = public + held
    items = prompts + [p.replace("consensus", "hard") for p in prompts]
    grades = pl.DataFrame({"system": "a", "track": "rubric", "item_id": items, "value": [1.0, 1.0, 1.0, 0.0, 0.0] * 2})
    row = part_gaps(
        grades, ["system", "track"], "item_id", HeldOutRule(0.5, salt, "item_id"), 999, 0, key=split_key()
    ).row(0, named=True)
    assert (row["n_public"], row["n_held_out"], row["groups_public"], row["groups_held_out"]) == (6, 4, 3, 2)
    # prompt means 1, 1, 1 public, 0, 0 held out: of the 10 arrangements of the 5 prompts only the observed one
    # reaches a difference of 1 (none reaches -1): p = 2 x 1/10. Items permuted one by one it would be 2 x 1/210.
    assert row["gap"] == 1.0 and row["p_permutation"] == pytest.approx(0.2)
