"""The robustness track's holes read from the store: the top-k judged (``judge_depth``), the scored retrievers, the
stored rows a slice of parents at a time, and the holes found and parked in scratch files (``StoredHoles``), for the
holes' step and the LLM plan."""

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from mama_pipeline.common.spilled_slices import SpilledSlices
from mama_pipeline.retrieval import StoredRankings
from mama_pipeline.robustness._labels import (
    HOLE_PAIR_COLUMNS,
    HOLE_SCHEMA,
    RowsOf,
    budget_per_slice,
    hole_slices,
    within_budget,
)
from mama_pipeline.robustness._variant_rankings import check_clean_rankings, retriever_order
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store

RANKINGS = "rankings"  # the retrieval group's asset and table (partition = retriever)
JUDGMENTS = "judgments"  # the judging group's asset and table
RANKED_COLUMNS = ["query_id", "retriever", "rank", "chunk_id"]  # what the steps read of a ranking (not its score)
VARIANT_RANKINGS = "variant_rankings"  # this group's asset and table (partition = retriever, query_id = variant id)


def judge_depth(s: PipelineSettings) -> int:
    """The top-k of each clean and variant ranking whose holes are judged and whose Judged@k is reported."""
    return s.robustness.judge_depth or s.retrieval.pool_depth


def scored_retrievers(s: PipelineSettings, store: Store, variants: pl.DataFrame) -> list[str]:
    """The scored retrievers (:func:`retriever_order`); one without a stored clean ranking of any of the variants'
    parents is refused."""
    names, _ = retriever_order(s.retrieval, s.robustness.retrievers)
    parents = variants.get_column("parent_id").unique().sort().to_list()
    check_clean_rankings(StoredRankings(store, names).present(parents), names, parents)
    return names


def parent_rows(store: Store, table: str, key: str, columns: list[str], partitions: list[str] | None = None) -> RowsOf:
    """Some ids' rows of a stored table (``columns``, of ``partitions`` when given; the parent's or the variant's
    id in ``key``), in the table's order."""
    return lambda ids: store.read_table(table, partitions=partitions, columns=columns, where={key: ids})


def ranked_rows(store: Store, names: list[str]) -> tuple[RowsOf, RowsOf]:
    """(some parents' clean rankings by ``names``, in the table's order; some variants' rankings by ``names``, by
    retriever, variant id and rank): their ranked columns."""
    variant_rows = parent_rows(store, VARIANT_RANKINGS, "query_id", RANKED_COLUMNS, names)
    return (
        parent_rows(store, RANKINGS, "query_id", RANKED_COLUMNS, names),
        lambda ids: variant_rows(ids).sort("retriever", "query_id", "rank"),  # partitions: no order among them
    )


class StoredHoles:
    """The variants' holes (:func:`hole_slices`) found a slice of parents at a time from the stored rankings and
    judgments, and parked in scratch files (``scratch``; None: the system's temporary folder) until the ``with``
    block ends: their counts, and each slice split by the hole budget as :func:`within_budget` splits them all."""

    def __init__(self, s: PipelineSettings, store: Store, variants: pl.DataFrame, scratch: Path | None):
        clean, ranked = ranked_rows(store, scored_retrievers(s, store, variants))
        judged_pairs = parent_rows(store, JUDGMENTS, "query_id", ["query_id", "chunk_id"])
        self.spill = SpilledSlices(scratch, pl.DataFrame(schema={c: HOLE_SCHEMA[c] for c in HOLE_PAIR_COLUMNS}))
        self.sizes: list[int] = []
        self.sides = {"clean": 0, "variant": 0}  # holes in some clean, or some variant, top-k
        rank_counts = []
        with self.spill:
            for holes in hole_slices(variants, ranked, clean, judged_pairs, judge_depth(s)):
                self.spill.add(holes, len(self.sizes))
                self.sizes.append(holes.height)
                rank_counts.append(holes.group_by("best_rank").len())
                for side in self.sides:
                    self.sides[side] += holes.filter(pl.col("sides").str.contains(side)).height
        self.quotas = budget_per_slice(rank_counts, s.robustness.max_hole_pairs)

    def __enter__(self) -> "StoredHoles":
        return self

    def __exit__(self, *exc) -> None:
        self.spill.discard()

    @property
    def total(self) -> int:
        return sum(self.sizes)

    @property
    def to_judge(self) -> int:
        return sum(n if q is None else q for n, q in zip(self.sizes, self.quotas, strict=True))

    def slices(self) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        """Each slice's (holes to judge, holes over the budget), the slices in order."""
        for i, quota in enumerate(self.quotas):
            yield within_budget(self.spill.scan([i]).collect(), quota)

    def pairs(self) -> Iterator[pl.DataFrame]:
        """Each slice's holes to judge as pairs: (query_id, the parent's id; chunk_id)."""
        for to_judge, _ in self.slices():
            yield to_judge.select(pl.col("parent_id").alias("query_id"), "chunk_id")
