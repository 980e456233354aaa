"""Inherited labels, holes of both sides, and the clean-versus-variant scoreboard on hand-made tables."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mama_pipeline.evaluation._per_query_scoring import evaluate, run_in
from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan
from mama_pipeline.evaluation._significance import (
    StatisticRefused,
    holm,
    paired_bootstrap_ci,
    paired_randomization_p,
)
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.robustness._labels import (
    LABEL_SCHEMA,
    budget_per_slice,
    hole_pairs,
    hole_slices,
    label_counts,
    label_needs,
    label_needs_of,
    needs_in,
    variant_labels,
    within_budget,
)
from mama_pipeline.robustness._robustness_scoreboard import (
    BOARD_SCHEMA,
    PAIR_SCHEMA,
    in_table_order,
    labels_in,
    paired_slices,
    pairs_in,
    robustness_board,
)

PARENTS = [f"q_{i:05d}" for i in range(1, 9)]
KINDS = ["typo", "shorthand"]


def variants() -> pl.DataFrame:
    rows = [(f"{p}~{k}", p, k, "high" if i % 2 else "very_high") for i, p in enumerate(PARENTS) for k in KINDS]
    return pl.DataFrame(rows, schema=["variant_id", "parent_id", "kind", "tier"], orient="row")


def label_rows(pairs: list[tuple[str, str, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        pairs, schema={"query_id": pl.String, "chunk_id": pl.String, "score": pl.Int8}, orient="row"
    ).with_columns(
        d1_topic=pl.col("score") > 0,
        d2_meaningful=pl.lit(1, pl.Int8),
        d3_actionable=pl.lit(1, pl.Int8),
        d4_density=pl.lit(1, pl.Int8),
        judge_model=pl.lit("j"),
        prompt_hash=pl.lit("h"),
    )


def labels_of(v: pl.DataFrame, judgments: pl.DataFrame, hole_labels: pl.DataFrame, per_slice: int = 5) -> pl.DataFrame:
    return pl.concat(variant_labels(v, needs_in(label_needs(judgments, hole_labels)), per_slice))


def paired(
    clean: pl.DataFrame,
    variant: pl.DataFrame,
    v: pl.DataFrame,
    labels_of,
    s: EvaluationSettings,
    judged_k: int,
    also: tuple[str, ...] = (),
    per_slice: int | None = None,
) -> pl.DataFrame:
    """The paired values of bm25, computed a slice of parents at a time and put in the table's order."""
    return pl.concat(
        in_table_order(
            paired_slices(run_in(clean), run_in(variant), v, labels_of, s, ["bm25"], judged_k, also, per_slice)
        )
    )


def board_of(clean, variant, v, labels, s, judged_k: int, tolerance: float) -> pl.DataFrame:
    pairs = paired(clean, variant, v, labels_in(labels), s, judged_k)
    return robustness_board(pairs_in(pairs), ["bm25"], v, s, f"Judged@{judged_k}", tolerance)


def ranking(query_id: str, retriever: str, chunks: list[str]) -> list[tuple]:
    return [(query_id, retriever, r, c, 10.0 - r) for r, c in enumerate(chunks, start=1)]


def frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "retriever": pl.String,
            "rank": pl.Int32,
            "chunk_id": pl.String,
            "score": pl.Float64,
        },
        orient="row",
    )


def test_holes_are_unlabelled_top_k_pairs_once_per_need_and_labels_are_inherited():
    v = variants().filter(pl.col("parent_id") == "q_00001")
    judgments = label_rows([("q_00001", "c1", 6), ("q_00001", "c2", 0)])
    rankings = frame(
        ranking("q_00001~typo", "bm25", ["c3", "c1", "c4", "c9"])
        + ranking("q_00001~shorthand", "bm25", ["c1", "c3", "c2", "c8"])
        + ranking("q_00001~shorthand", "dense", ["c5", "c2", "c3"])
    )
    holes = hole_pairs(v, rankings, frame([]), judgments, depth=3)
    assert holes.select("chunk_id", "best_rank", "sides", "kinds", "retrievers").rows() == [
        ("c3", 1, "variant", "shorthand,typo", "bm25,dense"),
        ("c5", 1, "variant", "shorthand", "dense"),
        ("c4", 3, "variant", "typo", "bm25"),
    ]
    first, rest = within_budget(holes, 2)
    assert first["chunk_id"].to_list() == ["c3", "c5"] and rest["chunk_id"].to_list() == ["c4"]
    hole_labels = label_rows([("q_00001", "c3", 4), ("q_00001", "c5", 0)])
    labels = labels_of(v, judgments, hole_labels)
    assert labels.filter(pl.col("variant_id") == "q_00001~typo").select("chunk_id", "score", "origin").rows() == [
        ("c1", 6, "inherited"),
        ("c2", 0, "inherited"),
        ("c3", 4, "hole"),
        ("c5", 0, "hole"),
    ]
    assert labels.height == 8  # both variants carry the need's four labels


def test_drop_interval_test_and_holm_come_from_the_shared_statistics():
    v = variants()
    judgments = label_rows([(p, f"{p}-rel", 6) for p in PARENTS])
    clean, typo, short = [], [], []
    for i, p in enumerate(PARENTS):
        clean += ranking(p, "bm25", [f"{p}-rel", "x1", "x2"])
        typo += ranking(f"{p}~typo", "bm25", ["x1", "x2", f"{p}-rel"] if i % 4 else [f"{p}-rel", "x1", "x2"])
        short += ranking(f"{p}~shorthand", "bm25", [f"{p}-rel", "x1", "x2"])
    labels = labels_of(v, judgments, label_rows([(p, c, 0) for p in PARENTS for c in ("x1", "x2")]))
    s = EvaluationSettings(cutoffs=[1, 3], significance_measures=["Success(rel=3)@1", "RR(rel=3)"], resamples=500)
    board = board_of(frame(clean), frame(typo + short), v, labels, s, judged_k=3, tolerance=0.05)
    row = board.filter(
        (pl.col("tier") == "all") & (pl.col("kind") == "typo") & (pl.col("measure") == "Success(rel=3)@1")
    ).row(0, named=True)
    a = np.ones(8)
    b = np.array([1.0 if i % 4 == 0 else 0.0 for i in range(8)])
    assert (row["clean_mean"], row["variant_mean"], row["drop"], row["n_queries"]) == (1.0, 0.25, 0.75, 8)
    with pytest.raises(StatisticRefused) as refused:
        paired_bootstrap_ci(a, b, 500, 0)  # 8 parents: too few for an interval
    assert (row["ci_low"], row["ci_high"], row["refused"]) == (None, None, refused.value.reason)
    assert row["p_randomization"] == pytest.approx(paired_randomization_p(a, b, 500, 0))
    family = board.filter((pl.col("tier") == "all") & (pl.col("measure") == "Success(rel=3)@1")).sort("kind")
    assert family["p_holm"].to_list() == pytest.approx(holm(family["p_randomization"].to_list()))
    unchanged = board.filter((pl.col("kind") == "shorthand") & (pl.col("tier") == "all"))
    assert unchanged["drop"].to_list() == [0.0, 0.0] and unchanged["p_randomization"].to_list() == [1.0, 1.0]
    assert set(board["measure"]) == {"Success(rel=3)@1", "RR(rel=3)"}  # Judged@3 stands beside each row
    coverage = (
        board.select("tier", "clean_judged", "variant_judged", "clean_ranked", "variant_ranked", "coverage_differs")
        .unique()
        .sort("tier")
    )
    assert coverage.rows() == [
        ("all", 1.0, 1.0, 8, 8, False),
        ("high", 1.0, 1.0, 4, 4, False),
        ("very_high", 1.0, 1.0, 4, 4, False),
    ]
    per_tier = board.filter(
        (pl.col("tier") == "high") & (pl.col("kind") == "typo") & (pl.col("measure") == "Success(rel=3)@1")
    )
    assert per_tier["n_queries"].to_list() == [4]


def test_no_variants_give_an_empty_board():
    empty = variants().clear()
    labels = labels_of(empty, label_rows([]), label_rows([]))
    pairs = paired(frame([]), frame([]), empty, labels_in(labels), EvaluationSettings(), judged_k=5)
    assert pairs.is_empty() and pairs.schema == pl.Schema(PAIR_SCHEMA)
    board = board_of(frame([]), frame([]), empty, labels, EvaluationSettings(), judged_k=5, tolerance=0.05)
    assert board.is_empty() and board.schema == pl.Schema(BOARD_SCHEMA)


def test_the_clean_top_k_of_every_scored_retriever_has_its_holes_filled_too():
    v = variants().filter(pl.col("parent_id") == "q_00001")
    judgments = label_rows([("q_00001", "c1", 6)])  # the pool judged only c1
    clean = frame(
        ranking("q_00001", "bm25", ["c1", "c2", "c7"])  # c2 unjudged at rank 2, c7 below the depth
        + ranking("q_00001", "dense", ["c6", "c1"])  # a retriever outside the pool
        + ranking("q_00002", "bm25", ["c9"])
    )  # a query without variants: not asked
    variant = frame(ranking("q_00001~typo", "bm25", ["c2", "c1"]))
    holes = hole_pairs(v, variant, clean, judgments, depth=2)
    assert holes.select("chunk_id", "best_rank", "sides", "kinds", "retrievers").rows() == [
        ("c2", 1, "clean,variant", "typo", "bm25"),
        ("c6", 1, "clean", "", "dense"),
    ]


def test_each_comparison_reports_both_sides_judged_at_k_and_flags_uneven_coverage():
    v = variants().filter(pl.col("parent_id").is_in(["q_00001", "q_00002"]) & (pl.col("kind") == "typo"))
    judgments = label_rows([("q_00001", "a", 6), ("q_00001", "b", 0), ("q_00002", "a", 6), ("q_00002", "b", 0)])
    clean = frame(ranking("q_00001", "bm25", ["a", "b"]) + ranking("q_00002", "bm25", ["b", "a"]))
    # q_00001~typo: one of two chunks unjudged (Judged@2 = 0.5); q_00002~typo: an empty ranking (no Judged@2)
    variant = frame(ranking("q_00001~typo", "bm25", ["a", "x"]))
    labels = labels_of(v, judgments, label_rows([]))
    s = EvaluationSettings(cutoffs=[1, 2], significance_measures=["Success(rel=3)@1"], resamples=200)

    def row(tolerance: float) -> dict:
        board = board_of(clean, variant, v, labels, s, judged_k=2, tolerance=tolerance)
        return board.filter(pl.col("tier") == "all").row(0, named=True)

    flagged = row(0.05)
    assert (flagged["clean_mean"], flagged["variant_mean"], flagged["n_queries"]) == (0.5, 0.5, 2)
    assert (flagged["clean_judged"], flagged["clean_ranked"]) == (1.0, 2)
    assert (flagged["variant_judged"], flagged["variant_ranked"]) == (0.5, 1)
    assert flagged["coverage_differs"] is True
    assert row(0.5)["coverage_differs"] is False  # a difference of 0.5 is within a tolerance of 0.5


def test_scoring_parents_a_slice_at_a_time_gives_the_values_of_one_pass():
    v = variants()
    judgments = label_rows([(p, f"{p}-rel", 6) for p in PARENTS] + [(p, "x1", 2) for p in PARENTS[::2]])
    clean, variant = [], []
    for i, p in enumerate(PARENTS):
        clean += ranking(p, "bm25", [f"{p}-rel", "x1"] if i % 3 else ["x1", f"{p}-rel"])
        variant += ranking(f"{p}~typo", "bm25", ["x1", f"{p}-rel"] if i % 2 else [f"{p}-rel", "x2"])
    variant += ranking("q_00003~shorthand", "bm25", ["x2"])  # the other variants of the kind: empty rankings
    labels = labels_of(v, judgments, label_rows([]))
    asked = []

    def reading(parents: list[str]) -> pl.DataFrame:
        asked.append(parents)
        return labels.filter(pl.col("parent_id").is_in(parents))

    s = EvaluationSettings(cutoffs=[1, 2], significance_measures=["Success(rel=3)@1", "RR(rel=3)"], resamples=100)
    one = paired(frame(clean), frame(variant), v, labels_in(labels), s, 2, also=("Judged@1",))
    sliced = paired(frame(clean), frame(variant), v, reading, s, 2, also=("Judged@1",), per_slice=3)
    assert asked == [PARENTS[0:3], PARENTS[3:6], PARENTS[6:8]]  # every parent once, three at a time
    assert sliced.equals(one)
    assert one.height == 8 * 2 * 4  # every (parent, kind) for each of the four measures
    # the relevant chunk second in q_00001's clean ranking and in q_00002's typo variant, first elsewhere
    rr = one.filter((pl.col("measure") == "RR(rel=3)") & (pl.col("kind") == "typo")).sort("parent_id")
    assert rr.select("parent_id", "clean", "variant").rows()[:3] == [
        ("q_00001", 0.5, 1.0),
        ("q_00002", 1.0, 0.5),
        ("q_00003", 1.0, 1.0),
    ]
    # only q_00003~shorthand has a ranking, of one unlabelled chunk: Judged@1 0; no ranking, no coverage
    shorthand = one.filter((pl.col("kind") == "shorthand") & (pl.col("measure") == "Judged@1")).sort("parent_id")
    assert shorthand.get_column("variant").to_list() == [None, None, 0.0, None, None, None, None, None]


@pytest.mark.parametrize("per_slice", [1, 2, 3, 100])
def test_labels_come_in_slices_of_whole_variants_in_variant_and_chunk_order(per_slice):
    v = pl.DataFrame(
        [
            ("q_00002~typo", "q_00002", "typo"),
            ("q_00001~typo", "q_00001", "typo"),
            ("q_00001~shorthand", "q_00001", "shorthand"),
        ],
        schema=["variant_id", "parent_id", "kind"],
        orient="row",
    )
    judgments = label_rows([("q_00001", "c2", 6), ("q_00001", "c1", 0), ("q_00002", "c9", 3)])
    # a hole label of a judged pair loses to the judgment; one of a parent without variants is not carried
    needs = label_needs(judgments, label_rows([("q_00001", "c0", 4), ("q_00002", "c9", 5), ("q_00003", "c1", 6)]))
    slices = list(variant_labels(v, needs_in(needs), per_slice))
    assert [s["variant_id"].n_unique() for s in slices] == [min(per_slice, 3 - i) for i in range(0, 3, per_slice)]
    labels = pl.concat(slices)
    assert labels.columns == list(LABEL_SCHEMA)
    assert labels.select("variant_id", "kind", "chunk_id", "score", "origin").rows() == [
        ("q_00001~shorthand", "shorthand", "c0", 4, "hole"),
        ("q_00001~shorthand", "shorthand", "c1", 0, "inherited"),
        ("q_00001~shorthand", "shorthand", "c2", 6, "inherited"),
        ("q_00001~typo", "typo", "c0", 4, "hole"),
        ("q_00001~typo", "typo", "c1", 0, "inherited"),
        ("q_00001~typo", "typo", "c2", 6, "inherited"),
        ("q_00002~typo", "typo", "c9", 3, "inherited"),
    ]
    assert label_counts(v, needs_in(needs)).rows() == [
        ("shorthand", "hole", 1),
        ("shorthand", "inherited", 2),
        ("typo", "hole", 1),
        ("typo", "inherited", 3),
    ]


def test_holes_and_label_needs_read_the_judgments_a_slice_of_parents_at_a_time_as_one_pass_finds_them():
    v = variants().filter(pl.col("parent_id").is_in(PARENTS[:4]))
    judgments = label_rows(
        [("q_00001", "a", 6), ("q_00002", "a", 0), ("q_00003", "b", 3), ("q_00004", "a", 5), ("q_00009", "a", 6)]
    )  # q_00009 has no variants: never read
    variant = frame(
        ranking("q_00001~typo", "bm25", ["a", "c"])
        + ranking("q_00002~shorthand", "bm25", ["b", "a"])
        + ranking("q_00004~typo", "bm25", ["x", "a", "y"])
    )
    clean = frame(ranking("q_00003", "bm25", ["c", "b"]) + ranking("q_00009", "bm25", ["z"]))
    asked = []

    def reading(parents: list[str]) -> pl.DataFrame:
        asked.append(parents)
        return judgments.filter(pl.col("query_id").is_in(parents))

    ranked = []

    def rankings_of(variant_ids: list[str]) -> pl.DataFrame:
        ranked.append(sorted({i.split("~")[0] for i in variant_ids}))
        return variant.filter(pl.col("query_id").is_in(variant_ids))

    slices = list(hole_slices(v, rankings_of, run_in(clean), reading, depth=2, parents_per_slice=3))
    assert asked == ranked == [PARENTS[0:3], PARENTS[3:4]]  # a slice's judgments and variant rankings at a time
    assert [s.height for s in slices] == [3, 1]
    holes = pl.concat(slices).sort("best_rank", "parent_id", "chunk_id")
    assert holes.rows() == [
        ("q_00002", "b", 1, "variant", "shorthand", "bm25"),
        ("q_00003", "c", 1, "clean", "", "bm25"),
        ("q_00004", "x", 1, "variant", "typo", "bm25"),
        ("q_00001", "c", 2, "variant", "typo", "bm25"),
    ]
    assert holes.equals(hole_pairs(v, variant, clean, judgments, depth=2))
    hole_labels = label_rows([("q_00001", "c", 4), ("q_00003", "c", 0), ("q_00009", "z", 6)])
    asked.clear()
    needs = label_needs_of(reading, lambda ids: hole_labels.filter(pl.col("query_id").is_in(ids)))
    assert needs(PARENTS[:4]).select("parent_id", "chunk_id", "score", "origin").sort(
        "parent_id", "chunk_id"
    ).rows() == [
        ("q_00001", "a", 6, "inherited"),
        ("q_00001", "c", 4, "hole"),
        ("q_00002", "a", 0, "inherited"),
        ("q_00003", "b", 3, "inherited"),
        ("q_00003", "c", 0, "hole"),
        ("q_00004", "a", 5, "inherited"),
    ]
    asked.clear()
    assert label_counts(v, needs, parents_per_slice=3).rows() == [
        ("shorthand", "hole", 2),
        ("shorthand", "inherited", 4),
        ("typo", "hole", 2),
        ("typo", "inherited", 4),
    ]
    assert asked == [PARENTS[0:3], PARENTS[3:4]]
    one_pass = needs_in(label_needs(judgments, hole_labels))
    assert label_counts(v, needs, parents_per_slice=3).equals(label_counts(v, one_pass))
    assert pl.concat(variant_labels(v, needs, 3)).equals(pl.concat(variant_labels(v, one_pass, 3)))


def test_labels_read_the_needs_of_each_slice_of_variants_and_counts_a_slice_of_parents_at_a_time():
    v = variants().filter(pl.col("parent_id").is_in(PARENTS[:5]))  # two variants a parent
    q1, q2, q3, q4, q5 = PARENTS[:5]
    judgments = label_rows(
        [(q1, "a", 6), (q1, "b", 0), (q2, "a", 3), (q4, "c", 5), (q5, "a", 1), (q5, "b", 2), (q5, "c", 3)]
        + [("q_00009", "a", 6)]  # no variants: never read
    )
    hole_labels = label_rows([(q1, "c", 4), (q2, "a", 5), (q3, "d", 2), ("q_00009", "z", 6)])  # q2's a is judged
    asked = []

    def reading(parents: list[str]) -> pl.DataFrame:
        asked.append(parents)
        return judgments.filter(pl.col("query_id").is_in(parents))

    needs = label_needs_of(reading, lambda ids: hole_labels.filter(pl.col("query_id").is_in(ids)))
    slices = list(variant_labels(v, needs, 3))
    # (q1~shorthand, q1~typo, q2~shorthand), (q2~typo, q3~shorthand, q3~typo), (q4~..., q4~..., q5~...), (q5~typo)
    assert asked == [[q1, q2], [q2, q3], [q4, q5], [q5]]
    assert [s.height for s in slices] == [3 + 3 + 1, 1 + 1 + 1, 1 + 1 + 3, 3]
    one_pass = list(variant_labels(v, needs_in(label_needs(judgments, hole_labels)), 3))
    assert len(slices) == len(one_pass) and all(s.equals(o) for s, o in zip(slices, one_pass, strict=True))
    assert pl.concat(slices).equals(labels_of(v, judgments, hole_labels, per_slice=100))
    assert pl.concat(slices).filter(pl.col("variant_id") == f"{q2}~typo").select(
        "chunk_id", "score", "origin"
    ).rows() == [("a", 3, "inherited")]
    asked.clear()
    counts = label_counts(v, needs, parents_per_slice=2)
    assert asked == [[q1, q2], [q3, q4], [q5]]
    assert counts.rows() == [
        ("shorthand", "hole", 2),
        ("shorthand", "inherited", 7),
        ("typo", "hole", 2),
        ("typo", "inherited", 7),
    ]
    assert counts.equals(label_counts(v, needs_in(label_needs(judgments, hole_labels))))


def test_no_variants_give_one_empty_slice_of_the_label_schema():
    needs = needs_in(label_needs(label_rows([("q_00001", "c1", 6)]), label_rows([])))
    (only,) = variant_labels(variants().clear(), needs)
    assert only.is_empty() and only.schema == pl.Schema(LABEL_SCHEMA)


def test_slices_of_parents_in_the_tables_order_are_one_whole_evaluation_paired_and_give_its_board(tmp_path):
    """Three parents a slice, two retrievers: the paired values, in the table's order, are those of one evaluation
    of every query at once, paired here; a few by hand, and the board's figures those of the shared statistics."""
    v = variants()
    judgments = label_rows([(p, f"{p}-rel", 6) for p in PARENTS] + [("q_00002", "x1", 3)])
    clean, variant = [], []
    for i, p in enumerate(PARENTS):
        clean += ranking(p, "bm25", ["x1", "x2", f"{p}-rel"] if i % 3 == 0 else [f"{p}-rel", "x1"])
        clean += ranking(p, "dense", [f"{p}-rel"])
        variant += ranking(f"{p}~typo", "bm25", ["x2", f"{p}-rel"] if i % 2 else [f"{p}-rel"])
        variant += ranking(f"{p}~typo", "dense", ["x1"])
        variant += ranking(f"{p}~shorthand", "bm25", ["x1"]) if i % 3 else []  # the others: empty rankings
    labels = labels_of(v, judgments, label_rows([(p, "x2", 0) for p in PARENTS[::2]]))
    s = EvaluationSettings(cutoffs=[1, 2], significance_measures=["Success(rel=3)@1", "RR(rel=3)"], resamples=300)
    retrievers = ["dense", "bm25"]
    slices = paired_slices(
        run_in(frame(clean)), run_in(frame(variant)), v, labels_in(labels), s, retrievers, 2, ("Judged@1",), 3
    )
    pairs = pl.concat(in_table_order(slices, tmp_path / "scratch"))
    assert not any((tmp_path / "scratch").iterdir())  # the parked slices are removed

    # one evaluation of every query, paired by hand
    run = frame(clean + variant).select(pl.col("query_id"), pl.col("chunk_id").alias("doc_id"), "rank", "retriever")
    qrels = pl.concat(
        [
            labels.select(pl.col("parent_id").alias("query_id"), "chunk_id", "score").unique(maintain_order=True),
            labels.select(pl.col("variant_id").alias("query_id"), "chunk_id", "score"),
        ]
    ).select("query_id", pl.col("chunk_id").alias("doc_id"), pl.col("score").cast(pl.Int64).alias("relevance"))
    plan = mamaretrieval_plan([1, 2], s.lenient, s.strict, s.max_grade)
    whole = evaluate(run, qrels, PARENTS + v["variant_id"].to_list(), plan, retrievers).per_query
    ranked = run.select("retriever", "query_id").unique().with_columns(ranked=pl.lit(True))
    values = (
        whole.filter(pl.col("measure").is_in(["Success(rel=3)@1", "RR(rel=3)", "Judged@2", "Judged@1"]))
        .join(ranked, on=["retriever", "query_id"], how="left")
        .with_columns(pl.when(pl.col("ranked") | ~pl.col("measure").str.starts_with("Judged")).then(pl.col("value")))
    )
    expected = (
        v.select(pl.col("variant_id").alias("query_id"), "parent_id", "kind")
        .join(values.select("retriever", "query_id", "measure", pl.col("value").alias("variant")), on="query_id")
        .join(
            values.select(
                "retriever", pl.col("query_id").alias("parent_id"), "measure", pl.col("value").alias("clean")
            ),
            on=["retriever", "parent_id", "measure"],
        )
        .select(list(PAIR_SCHEMA))
        .sort("retriever", "kind", "measure", "parent_id")
    )
    assert pairs.equals(expected) and pairs.height == 2 * 16 * 4

    def value(retriever: str, parent: str, kind: str, measure: str) -> tuple:
        at = (pl.col("retriever") == retriever) & (pl.col("parent_id") == parent) & (pl.col("kind") == kind)
        return pairs.filter(at & (pl.col("measure") == measure)).select("clean", "variant").row(0)

    assert value("bm25", "q_00001", "typo", "RR(rel=3)") == (1 / 3, 1.0)  # relevant third (x1, x2 not), then first
    assert value("bm25", "q_00001", "typo", "Judged@2") == (0.5, 1.0)  # x2 a hole labelled 0, x1 never judged
    assert value("bm25", "q_00002", "typo", "RR(rel=3)") == (1.0, 0.5)
    assert value("bm25", "q_00002", "shorthand", "Success(rel=3)@1") == (1.0, 1.0)  # x1 is relevant to q_00002
    assert value("bm25", "q_00003", "shorthand", "Judged@1") == (1.0, 0.0)  # x1 unjudged for q_00003
    assert value("dense", "q_00003", "shorthand", "Judged@1") == (1.0, None)  # no ranking, no coverage
    assert value("dense", "q_00003", "shorthand", "RR(rel=3)") == (1.0, 0.0)

    board = robustness_board(pairs_in(pairs), retrievers, v, s, "Judged@2", 0.05)
    assert board.select("tier", "kind", "retriever", "measure").rows() == [
        (t, k, r, m)
        for t in ("all", "high", "very_high")
        for k in KINDS[::-1]
        for r in sorted(retrievers)
        for m in ("RR(rel=3)", "Success(rel=3)@1")
    ]
    row = board.filter((pl.col("tier") == "all") & (pl.col("kind") == "typo") & (pl.col("retriever") == "bm25")).filter(
        pl.col("measure") == "Success(rel=3)@1"
    )
    a = np.array([0.0, 1, 1, 0, 1, 1, 0, 1])  # the clean top chunk: x1 (not relevant) for q_00001, 4, 7
    b = np.array([1.0, 0, 1, 0, 1, 0, 1, 0])  # typo: x2 first for every second parent
    assert row.select("n_queries", "clean_mean", "variant_mean", "drop").row(0) == (8, 0.625, 0.5, 0.125)
    assert row.select("ci_low", "ci_high", "refused").row(0) == (
        None,
        None,
        "interval: 8 values, fewer than the 30 a bootstrap interval needs",
    )
    assert row["p_randomization"].item() == paired_randomization_p(a, b, 300, 0)
    assert row.select("clean_judged", "variant_judged", "clean_ranked", "variant_ranked").row(0) == (0.5, 0.75, 8, 8)
    family = board.filter((pl.col("tier") == "all") & (pl.col("measure") == "Success(rel=3)@1"))
    assert family["p_holm"].to_list() == holm(family["p_randomization"].to_list())


def counts(ranks: dict[int, int]) -> pl.DataFrame:
    return pl.DataFrame(
        {"best_rank": list(ranks), "len": list(ranks.values())}, schema={"best_rank": pl.Int32, "len": pl.UInt32}
    )


def test_the_hole_budget_per_slice_keeps_the_holes_one_table_would_keep():
    # three slices of parents; ranks 1, 2, 3 hold 3, 4, 2 holes in all
    slices = [counts({1: 1, 2: 2}), counts({2: 1, 3: 2}), counts({1: 2, 2: 1})]
    assert budget_per_slice(slices, None) == [None, None, None]
    assert budget_per_slice(slices, 9) == [None, None, None]  # all 9 holes fit
    assert budget_per_slice(slices, 0) == [0, 0, 0]
    assert budget_per_slice(slices, 2) == [1, 0, 1]  # 2 of rank 1's 3: the first slice's, then the third's first
    assert budget_per_slice(slices, 3) == [1, 0, 2]  # every rank 1
    assert budget_per_slice(slices, 5) == [3, 0, 2]  # rank 1, and 2 of rank 2: the first slice's two
    assert budget_per_slice(slices, 6) == [3, 1, 2]  # rank 2's next is the second slice's
    assert budget_per_slice(slices, 8) == [3, 2, 3]  # all of ranks 1 and 2 (7), one of rank 3: the second slice's
    assert budget_per_slice([counts({})], 1) == [None]


def test_slices_split_by_their_budget_are_one_table_split_by_the_budget():
    v = variants()
    variant = frame(
        [
            row
            for i, p in enumerate(PARENTS)
            for row in ranking(f"{p}~typo", "bm25", [f"c{(i * 3 + j) % 7}" for j in range(3)])
        ]
    )
    judgments = label_rows([("q_00001", "c0", 6), ("q_00004", "c2", 1)])
    one = hole_pairs(v, variant, frame([]), judgments, depth=3)
    slices = list(
        hole_slices(
            v,
            lambda ids: variant.filter(pl.col("query_id").is_in(ids)),
            lambda ids: frame([]),
            lambda ids: judgments.filter(pl.col("query_id").is_in(ids)),
            depth=3,
            parents_per_slice=3,
        )
    )
    assert len(slices) == 3 and one.height == 22
    for budget in (None, 0, 1, 5, 8, 9, 15, 21, 22, 30):
        quotas = budget_per_slice([s.group_by("best_rank").len() for s in slices], budget)
        parts = [within_budget(s, q) for s, q in zip(slices, quotas, strict=True)]
        judged, over = within_budget(one, budget)
        order = ["best_rank", "parent_id", "chunk_id"]
        assert pl.concat([j for j, _ in parts]).sort(order).equals(judged), budget
        assert pl.concat([o for _, o in parts]).sort(order).equals(over), budget
