"""Labels of the variants: the parent's judged pairs, inherited, plus the holes their rankings open.

A variant asks for the parent's information, so a label belongs to the
information need, (parent, chunk). The variant inherits every judged pair of its
parent (``origin = inherited``). A chunk that the parent never had judged, in
the top-k of some variant's ranking or of the parent's own clean ranking by a
scored retriever, is a hole: both sides are judged to the same depth for the
same retrievers, so a drop is not an artefact of one side's unjudged chunks
(a clean ranking outside the pool's retrievers, or deeper than the pool, has
them too). A hole is judged once, for the parent's clean question, by the same
judge, prompt and label store as the pool (:func:`judge_pairs`, so a hole
already labelled is reused, never re-asked), and the label then applies to the
parent and to all its variants (``origin = hole``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import polars as pl

from mama_pipeline.judging import RUBRIC_LABEL
from mama_pipeline.store.table_schema import table_schema

VARIANTS_PER_SLICE = 5_000  # ~400,000 label rows at a parent's ~80 labels
PARENTS_PER_SLICE = 2_000  # parents (with all their variants) whose judgments are read at once
NEED_COLUMNS = [
    "query_id",
    "chunk_id",
    *RUBRIC_LABEL,
    "judge_model",
    "prompt_hash",
]  # a judgment, as label_needs reads it
RowsOf = Callable[[list[str]], pl.DataFrame]  # ids (of parents, or variants) -> their rows of a table (e.g. judgments)
LABEL_SCHEMA = table_schema("variant_labels")
HOLE_SCHEMA = table_schema("variant_holes")
HOLE_PAIR_COLUMNS = ["parent_id", "chunk_id", "best_rank", "sides", "kinds", "retrievers"]  # a hole, before judging


def hole_pairs(
    variants: pl.DataFrame,
    variant_rankings: pl.DataFrame,
    clean_rankings: pl.DataFrame,
    judgments: pl.DataFrame,
    depth: int,
) -> pl.DataFrame:
    """(parent, chunk) pairs without a label of the parent in the top ``depth`` of some variant's ranking or of
    the parent's own clean ranking (both sides judged alike), best rank first."""
    variant_top = (
        variant_rankings.filter(pl.col("rank") <= depth)
        .join(variants.select(pl.col("variant_id").alias("query_id"), "parent_id", "kind"), on="query_id", how="inner")
        .with_columns(side=pl.lit("variant"))
    )
    parents = variants.select(pl.col("parent_id").alias("query_id")).unique()
    clean_top = (
        clean_rankings.filter(pl.col("rank") <= depth)
        .join(parents, on="query_id", how="inner")
        .with_columns(parent_id=pl.col("query_id"), kind=pl.lit(None, pl.String), side=pl.lit("clean"))
    )
    columns = ["parent_id", "chunk_id", "rank", "kind", "retriever", "side"]
    judged = judgments.select(pl.col("query_id").alias("parent_id"), "chunk_id")
    return (
        pl.concat([variant_top.select(columns), clean_top.select(columns)], how="vertical_relaxed")
        .join(judged, on=["parent_id", "chunk_id"], how="anti")
        .group_by("parent_id", "chunk_id")
        .agg(
            pl.col("rank").min().cast(pl.Int32).alias("best_rank"),
            pl.col("side").unique().sort().str.join(",").alias("sides"),
            pl.col("kind").drop_nulls().unique().sort().str.join(",").alias("kinds"),
            pl.col("retriever").unique().sort().str.join(",").alias("retrievers"),
        )
        .sort("best_rank", "parent_id", "chunk_id")
    )


def parent_slices(variants: pl.DataFrame, per_slice: int) -> Iterator[list[str]]:
    """The variants' parent ids, sorted, ``per_slice`` at a time (at least one slice, empty without variants)."""
    parents = variants.get_column("parent_id").unique().sort().to_list()
    for start in range(0, max(len(parents), 1), per_slice):
        yield parents[start : start + per_slice]


def hole_slices(
    variants: pl.DataFrame,
    variant_rankings_of: RowsOf,
    clean_of: RowsOf,
    judged_of: RowsOf,
    depth: int,
    parents_per_slice: int | None = None,
) -> Iterator[pl.DataFrame]:
    """:func:`hole_pairs` a slice of ``parents_per_slice`` parents (:data:`PARENTS_PER_SLICE` by default) at a
    time, the parents in sorted order: ``variant_rankings_of`` gives the rankings of a slice's variants (by variant
    id), ``clean_of`` the clean rankings and ``judged_of`` the judged pairs (query_id, chunk_id) of its parents.
    The slices hold one slice's rankings and judgments at a time; taken in order, each slice's holes with one
    ``best_rank`` follow those of the slices before it in :func:`hole_pairs`' order."""
    for ids in parent_slices(variants, parents_per_slice or PARENTS_PER_SLICE):
        mine = variants.filter(pl.col("parent_id").is_in(ids))
        yield hole_pairs(
            mine, variant_rankings_of(mine.get_column("variant_id").to_list()), clean_of(ids), judged_of(ids), depth
        )


def within_budget(holes: pl.DataFrame, max_pairs: int | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(holes to judge, holes left unjudged): the first ``max_pairs`` by best rank, then parent and chunk id."""
    if max_pairs is None:
        return holes, holes.clear()
    return holes.head(max_pairs), holes.slice(max_pairs)


def budget_per_slice(rank_counts: list[pl.DataFrame], max_pairs: int | None) -> list[int | None]:
    """For each slice of :func:`hole_slices` (its holes counted per best rank: best_rank, len), how many of its
    first holes :func:`within_budget` judges when the slices are one table: every hole ranked better than the
    rank where the budget runs out, and those at that rank that earlier slices leave room for (None: all)."""
    if max_pairs is None or sum(int(c.get_column("len").sum()) for c in rank_counts) <= max_pairs:
        return [None] * len(rank_counts)
    totals = (
        pl.concat(rank_counts)
        .group_by("best_rank")
        .agg(pl.col("len").sum())
        .sort("best_rank")
        .with_columns(before=pl.col("len").cum_sum() - pl.col("len"))
    )
    last, _, before = totals.filter(pl.col("before") + pl.col("len") >= max_pairs).row(0)
    left = max_pairs - before
    quotas: list[int | None] = []
    for counts in rank_counts:
        at = int(counts.filter(pl.col("best_rank") == last).get_column("len").sum())
        quotas.append(int(counts.filter(pl.col("best_rank") < last).get_column("len").sum()) + min(at, left))
        left -= min(at, left)
    return quotas


def hole_outcomes(holes: pl.DataFrame, over_budget: pl.DataFrame, outcomes: pl.DataFrame) -> pl.DataFrame:
    """One row per hole: judged now, reused from the label store, failed (with the reason) or over budget."""
    asked = holes.join(
        outcomes.select(
            pl.col("query_id").alias("parent_id"), "chunk_id", pl.col("status").alias("_s"), "reused", "failure_reason"
        ),
        on=["parent_id", "chunk_id"],
        how="left",
    ).with_columns(
        status=pl.when(pl.col("_s") == "labelled")
        .then(pl.when(pl.col("reused")).then(pl.lit("reused")).otherwise(pl.lit("judged")))
        .otherwise(pl.lit("failed"))
    )
    parts = [
        asked.select(list(HOLE_SCHEMA)),
        over_budget.with_columns(status=pl.lit("over_budget"), failure_reason=pl.lit(None, pl.String)).select(
            list(HOLE_SCHEMA)
        ),
    ]
    return pl.concat([p.select([pl.col(c).cast(t) for c, t in HOLE_SCHEMA.items()]) for p in parts]).sort(
        "best_rank", "parent_id", "chunk_id"
    )


def label_needs(judgments: pl.DataFrame, hole_labels: pl.DataFrame) -> pl.DataFrame:
    """One label per information need (parent_id, chunk_id): the parent's judgment (inherited), else the hole's."""
    cols = ["query_id", "chunk_id", *RUBRIC_LABEL, "judge_model", "prompt_hash"]
    return (
        pl.concat(
            [
                judgments.select(cols).with_columns(origin=pl.lit("inherited")),
                hole_labels.select(cols).with_columns(origin=pl.lit("hole")),
            ],
            how="vertical_relaxed",
        )
        .unique(["query_id", "chunk_id"], keep="first", maintain_order=True)
        .rename({"query_id": "parent_id"})
    )


def label_needs_of(judged_of: RowsOf, hole_labels_of: RowsOf) -> RowsOf:
    """The :func:`label_needs` of some parents, ``judged_of`` giving their judgments and ``hole_labels_of`` their
    holes' labels (NEED_COLUMNS): a parent's needs depend on its own judgments and hole labels only, so any slice
    of parents gets the rows of one pass."""
    return lambda ids: label_needs(judged_of(ids), hole_labels_of(ids))


def needs_in(needs: pl.DataFrame) -> RowsOf:
    """The needs of some parents, from :func:`label_needs` held in memory."""
    return lambda ids: needs.filter(pl.col("parent_id").is_in(ids))


def variant_labels(
    variants: pl.DataFrame, needs_of: RowsOf, variants_per_slice: int = VARIANTS_PER_SLICE
) -> Iterator[pl.DataFrame]:
    """Every variant's labels, its parent's :func:`label_needs`, in (variant_id, chunk_id) order: slices of
    ``variants_per_slice`` variants (at least one slice, empty without variants), ``needs_of`` giving the needs of
    a slice's parents when the slice is built, so memory grows with a slice."""
    ordered = variants.select("variant_id", "parent_id", "kind").sort("variant_id")
    for offset in range(0, max(ordered.height, 1), variants_per_slice):
        mine = ordered.slice(offset, variants_per_slice)
        yield (
            mine.join(needs_of(mine.get_column("parent_id").unique().sort().to_list()), on="parent_id", how="inner")
            .select([pl.col(c).cast(t) for c, t in LABEL_SCHEMA.items()])
            .sort("variant_id", "chunk_id")
        )


def label_counts(variants: pl.DataFrame, needs_of: RowsOf, parents_per_slice: int = PARENTS_PER_SLICE) -> pl.DataFrame:
    """Rows of :func:`variant_labels` by kind and origin (kind, origin, len), without building them: the needs are
    read a slice of parents at a time and only their counts per (parent, origin) kept."""
    per_parent = pl.concat(
        needs_of(ids).group_by("parent_id", "origin").len() for ids in parent_slices(variants, parents_per_slice)
    )
    return (
        variants.select("parent_id", "kind")
        .join(per_parent, on="parent_id", how="inner")
        .group_by("kind", "origin")
        .agg(pl.col("len").sum())
        .sort("kind", "origin")
    )
