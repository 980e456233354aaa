"""Agreement statistics on a hand-made example whose figures are worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.mamabench._scope_agreement import (
    agreement_stats,
    confusion_matrix,
    prior_pairs,
    sample_ids,
    verdict_pairs,
)
from mama_pipeline_tests.mamabench.helpers import adapted

M, N, C, S, X = "MATERNAL", "NEONATAL", "CHILD_HEALTH", "SEXUAL_AND_REPRODUCTIVE_HEALTH", "NONE"
PAIRS = pl.DataFrame(
    {
        "item_id": [f"i{k:02d}" for k in range(1, 11)],
        "a": [M, M, M, N, C, C, X, X, X, None],
        "b": [M, M, X, N, C, N, X, X, None, S],
    }
)


def test_agreement_figures_match_the_hand_computation() -> None:
    st = agreement_stats(PAIRS)
    # 8 items labelled by both; 6 agree (i01 i02 i04 i05 i07 i08)
    assert (st.items, st.jointly_labelled, st.agreeing, st.agreement_pct) == (10, 8, 6, 75.0)
    assert (st.failed_a, st.failed_b, st.failed_items) == (1, 1, ["i09", "i10"])
    # p_o = 6/8; p_e = (3*2 + 1*2 + 2*1 + 0*0 + 2*3) / 64 = 0.25; kappa = 0.5 / 0.75
    assert st.cohens_kappa == pytest.approx(2 / 3, abs=1e-4)
    # Wilson 95%: centre (0.75 + z^2/16) / (1 + z^2/8), half-width 0.2596
    assert st.agreement_ci95 == pytest.approx((40.93, 92.85), abs=0.02)
    per = {r["category"]: (r["count_a"], r["count_b"], r["diff"], r["diff_pct"]) for r in st.per_category}
    assert per == {
        M: (3, 2, -1, -12.5),
        N: (1, 2, 1, 12.5),
        C: (2, 1, -1, -12.5),
        S: (0, 0, 0, 0.0),
        X: (2, 3, 1, 12.5),
    }


def test_confusion_matrix_has_every_cell() -> None:
    conf = confusion_matrix(PAIRS)
    assert conf.height == 25 and conf["n"].sum() == 8
    cells = {(a, b): n for a, b, n in conf.filter(pl.col("n") > 0).iter_rows()}
    assert cells == {(M, M): 2, (M, X): 1, (N, N): 1, (C, C): 1, (C, N): 1, (X, X): 2}


def test_no_joint_labels_gives_no_figures() -> None:
    st = agreement_stats(PAIRS.filter(pl.col("a").is_null() | pl.col("b").is_null()))
    assert st.jointly_labelled == 0 and st.agreement_pct is None and st.cohens_kappa is None


def test_seeded_sample_is_order_free_nested_and_seed_dependent() -> None:
    ids = [f"item{k}" for k in range(100)]
    five = sample_ids(ids, 5, seed=3)
    assert five == sample_ids(list(reversed(ids)), 5, seed=3)
    assert set(sample_ids(ids, 3, seed=3)) <= set(five)
    assert five != sample_ids(ids, 5, seed=4)
    assert sample_ids(ids, 0, seed=3) == sorted(ids)


def test_verdict_pairs_turn_failures_into_nulls() -> None:
    a = pl.DataFrame({"item_id": ["x", "y", "z"], "status": ["ok", "parse_failed", "ok"], "category": [M, None, X]})
    b = pl.DataFrame({"item_id": ["x", "y", "z"], "status": ["ok", "ok", "transport_failed"], "category": [M, N, None]})
    assert verdict_pairs(a, b).rows() == [("x", M, M), ("y", None, N), ("z", X, None)]


def test_parity_against_prior_labels_maps_srh_and_counts_unclassified() -> None:
    rows = adapted("kenya_vignettes").head(3)  # priors SRH, ... as the fixture has them
    priors = rows["prior_category"].to_list()
    verdicts = pl.DataFrame(
        {
            "item_id": rows["item_id"],
            "status": ["ok", "ok", "parse_failed"],
            "category": [S, X, None],
        }
    )
    pairs = prior_pairs(rows, verdicts, "kenya_vignettes")
    assert priors[0] == "SRH" and pairs["a"][0] == S
    assert pairs["b"].to_list()[1:] == [X, None]
    st = agreement_stats(pairs)
    assert st.failed_b == 1 and st.jointly_labelled == 2


def test_an_unknown_prior_label_names_the_item() -> None:
    rows = adapted("kenya_vignettes").head(1).with_columns(pl.lit("OBGYN").alias("prior_category"))
    verdicts = pl.DataFrame({"item_id": rows["item_id"], "status": ["ok"], "category": [M]})
    with pytest.raises(ValueError, match="item kenya_vignettes:5: label 'OBGYN'"):
        prior_pairs(rows, verdicts, "kenya_vignettes")
