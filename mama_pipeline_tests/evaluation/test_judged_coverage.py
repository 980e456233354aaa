"""Precision and recall are flagged where the retriever's Judged@k is under the bound, and only there."""

import polars as pl

from mama_pipeline.evaluation._judged_coverage import incomplete_pool_flags


def _row(tier, retriever, family, label, k, mean):
    return {"tier": tier, "retriever": retriever, "family": family, "label": label, "k": k, "mean": mean}


def test_flags_p_and_r_under_the_bound_only():
    board = pl.DataFrame(
        [
            _row("all", "bm25", "Judged", "Judged@5", 5, 0.95),
            _row("all", "bm25", "P", "P@5 lenient", 5, 0.4),
            _row("all", "late", "Judged", "Judged@5", 5, 0.5),
            _row("all", "late", "P", "P@5 lenient", 5, 0.3),
            _row("all", "late", "R", "R@5 strict", 5, 0.2),
            _row("all", "late", "HR", "HR@5 lenient", 5, 0.9),  # robust: never flagged
            _row("all", "late", "P", "P@20 lenient", 20, 0.1),  # no Judged@20 measured: flagged, null
            _row("high", "bm25", "Judged", "Judged@5", 5, 0.1),  # tiers are not read
            _row("high", "bm25", "P", "P@5 lenient", 5, 0.4),
        ]
    )
    flags = incomplete_pool_flags(board, 0.9)
    assert flags.rows() == [
        ("late", "P@5 lenient", 5, 0.5),
        ("late", "R@5 strict", 5, 0.5),
        ("late", "P@20 lenient", 20, None),
    ]
    assert incomplete_pool_flags(board, 0.4).height == 1  # only the unmeasured one
