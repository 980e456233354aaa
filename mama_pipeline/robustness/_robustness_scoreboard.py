"""Clean versus variant, per retriever and kind: the drop, its paired bootstrap interval and a paired test.

Clean query and variant are scored with ir_measures on the same qrels, those of
their information need (the parent's judged pairs plus the judged holes), so a
drop measures the query change alone. Per (tier, kind, retriever, measure) the
variant's per-query values are paired with its parent's over the parents that
have a variant of that kind; the interval and the randomization test come from
:mod:`mama_pipeline.evaluation._significance`, and Holm runs across the family of
(kind, retriever) comparisons of one measure and tier. Beside each comparison
stand both sides' Judged@k (label coverage of each top-k, over the rankings
that are not empty) and a flag when the two differ by more than
``robustness.coverage_tolerance``: a drop is read only where both sides were
judged alike.

Parents are scored a slice at a time (with their variants, rankings and labels),
so memory grows with a slice, not with the pool: per-query measures do not
depend on other queries. The slices' values are put in the table's order
(retriever, kind, measure, parent) through scratch files, one key at a time, and
the board reads them back one retriever and kind at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import polars as pl

from mama_pipeline.common.progress import track
from mama_pipeline.common.slices import id_slices
from mama_pipeline.common.spilled_slices import SpilledSlices
from mama_pipeline.evaluation import (
    StatisticRefused,
    check_measures,
    evaluate,
    holm,
    mamaretrieval_plan,
    paired_bootstrap_ci,
    paired_randomization_p,
    rankings_to_run,
)
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.store.table_schema import table_schema

BOARD_SCHEMA = table_schema("robustness_scoreboard")
PARENT_SLICE = 2_000  # parents (with all their variants) scored at once
PAIR_SCHEMA = table_schema("robustness_per_query")


LabelsOf = Callable[[list[str]], pl.DataFrame]  # parent ids -> their variants' label rows
RankingsOf = Callable[[list[str]], pl.DataFrame]  # query ids -> their ranked rows (query_id, retriever, rank, chunk_id)
PairsOf = Callable[[str, str], pl.DataFrame]  # (retriever, kind) -> its pairs (PAIR_SCHEMA), in (measure, parent) order
TABLE_ORDER = ["retriever", "kind", "measure", "parent_id"]  # the order of the paired values


def labels_in(labels: pl.DataFrame) -> LabelsOf:
    """The label rows of some parents' variants, from variant labels held in memory."""
    return lambda parents: labels.filter(pl.col("parent_id").is_in(parents))


def pairs_in(pairs: pl.DataFrame) -> PairsOf:
    """The pairs of one retriever and kind, from paired values held in memory (in :data:`TABLE_ORDER`)."""
    return lambda retriever, kind: pairs.filter((pl.col("retriever") == retriever) & (pl.col("kind") == kind))


def need_qrels(labels: pl.DataFrame) -> pl.DataFrame:
    """Qrels of every parent and every variant from the variant labels (one label per need and chunk)."""
    parents = labels.select(pl.col("parent_id").alias("query_id"), "chunk_id", "score").unique(
        ["query_id", "chunk_id"], keep="first", maintain_order=True
    )
    variants = labels.select(pl.col("variant_id").alias("query_id"), "chunk_id", "score")
    return pl.concat([parents, variants]).select(
        "query_id", pl.col("chunk_id").alias("doc_id"), pl.col("score").cast(pl.Int64).alias("relevance")
    )


def paired_measures(s: EvaluationSettings, judged_k: int, also: Sequence[str] = ()) -> list[str]:
    """The measures paired: the significance measures, Judged@``judged_k`` and those named in ``also``."""
    return list(dict.fromkeys([*s.significance_measures, f"Judged@{judged_k}", *also]))


def paired_slices(
    clean_of: RankingsOf,
    variant_rankings_of: RankingsOf,
    variants: pl.DataFrame,
    labels_of: LabelsOf,
    s: EvaluationSettings,
    retrievers: list[str],
    judged_k: int,
    also: Sequence[str] = (),
    parents_per_slice: int | None = None,
) -> Iterator[pl.DataFrame]:
    """Per (retriever, parent, kind, measure) of :func:`paired_measures` (measures of the plan): the clean and the
    variant value, a slice of ``parents_per_slice`` parents (:data:`PARENT_SLICE` by default) at a time, each
    slice in :data:`TABLE_ORDER`.

    ``clean_of`` gives a slice's clean rankings by ``retrievers``, ``variant_rankings_of`` its variants' rankings
    and ``labels_of`` its variants' label rows. Judged@k is left null on a side whose ranking is empty: it has no
    chunk, judged or not (every other measure scores an empty ranking 0)."""
    plan = mamaretrieval_plan(sorted({*s.cutoffs, judged_k}), s.lenient, s.strict, s.max_grade)
    check_measures(s.significance_measures, plan.by_name(), "evaluation.significance_measures")
    wanted = paired_measures(s, judged_k, also)
    parents = variants.get_column("parent_id").unique().sort().to_list()
    with track("robustness: parents scored", total=len(parents), unit="parents", heartbeat=True, alike=True) as bar:
        for ids in id_slices(parents, parents_per_slice or PARENT_SLICE):
            mine = variants.filter(pl.col("parent_id").is_in(ids))
            run = rankings_to_run(
                pl.concat([clean_of(ids), variant_rankings_of(mine.get_column("variant_id").to_list())])
            )
            query_ids = ids + mine.get_column("variant_id").sort().to_list()
            qrels = need_qrels(labels_of(ids))
            evaluation = evaluate(run, qrels, query_ids, plan, retrievers, "rankings", "variant labels")
            pairs = _pairs(evaluation.per_query.filter(pl.col("measure").is_in(wanted)), run, mine)
            yield pairs.sort(TABLE_ORDER)
            bar.update(len(ids))


def _pairs(per_query: pl.DataFrame, run: pl.DataFrame, variants: pl.DataFrame) -> pl.DataFrame:
    """Each variant's value beside its parent's; Judged@k null on a side without a ranking."""
    ranked = run.select("retriever", "query_id").unique().with_columns(_ranked=pl.lit(True))
    values = (
        per_query.join(ranked, on=["retriever", "query_id"], how="left")
        .with_columns(
            value=pl.when(~pl.col("measure").str.starts_with("Judged@") | pl.col("_ranked")).then(pl.col("value"))
        )
        .drop("_ranked")
    )
    return (
        variants.select(pl.col("variant_id").alias("query_id"), "parent_id", "kind")
        .join(values, on="query_id")
        .rename({"value": "variant"})
        .join(values.rename({"query_id": "parent_id", "value": "clean"}), on=["retriever", "parent_id", "measure"])
        .select(list(PAIR_SCHEMA))
    )


def in_table_order(slices: Iterable[pl.DataFrame], folder: Path | None = None) -> Iterator[pl.DataFrame]:
    """The pairs of every slice of parents (each in :data:`TABLE_ORDER`, the slices' parents ascending) in
    :data:`TABLE_ORDER`, one (retriever, kind, measure) at a time (one empty frame without pairs): each slice's
    rows of a key are parked in a scratch file under ``folder`` (:class:`SpilledSlices`, removed after), and a
    key's files are read back in the slices' order."""
    with SpilledSlices(folder, pl.DataFrame(schema=PAIR_SCHEMA)) as spill:
        for part in slices:
            for key, rows in part.partition_by(TABLE_ORDER[:3], as_dict=True, maintain_order=True).items():
                spill.add(rows, key)
    yield from spill.read(sorted(spill.files))


def robustness_board(
    pairs_of: PairsOf,
    retrievers: list[str],
    variants: pl.DataFrame,
    s: EvaluationSettings,
    judged: str,
    coverage_tolerance: float,
) -> pl.DataFrame:
    """One row per (tier, kind, retriever, significance measure), with both sides' ``judged`` (Judged@k) beside
    it; ``pairs_of`` gives the paired values of one retriever and kind (one is held at a time)."""
    tiers = variants.select("parent_id", "tier").unique()
    names = ["all", *sorted(tiers.get_column("tier").unique().to_list())]
    kinds = sorted(variants.get_column("kind").unique().to_list())
    rows = []
    for retriever, kind in [(r, k) for r in sorted(retrievers) for k in kinds]:
        block = pairs_of(retriever, kind)
        with_tier = block.join(tiers, on="parent_id", how="left", maintain_order="left")
        for t, tier in enumerate(names):
            seg = block if tier == "all" else with_tier.filter(pl.col("tier") == tier)
            rows += [(t, row) for row in _comparisons(seg, tier, s, judged, coverage_tolerance)]
    rows.sort(key=lambda x: (x[0], x[1]["retriever"], x[1]["kind"], x[1]["measure"]))  # the order Holm sees
    board = pl.DataFrame([row for _, row in rows], schema={k: v for k, v in BOARD_SCHEMA.items() if k != "p_holm"})
    return _with_holm(board)


def _comparisons(seg: pl.DataFrame, tier: str, s: EvaluationSettings, judged: str, tolerance: float) -> list[dict]:
    """The board rows of one retriever and kind in a tier: one per significance measure, coverage beside it."""
    coverage = _coverage(seg.filter(pl.col("measure") == judged), tolerance)
    compared = seg.filter(pl.col("measure").is_in(s.significance_measures) & (pl.col("measure") != judged))
    rows = []
    for (kind, retriever, measure), group in compared.group_by("kind", "retriever", "measure", maintain_order=True):
        a = group.get_column("clean").to_numpy().astype(float)
        b = group.get_column("variant").to_numpy().astype(float)
        row = {
            "tier": tier,
            "kind": kind,
            "retriever": retriever,
            "measure": measure,
            "n_queries": a.size,
            "clean_mean": float(a.mean()),
            "variant_mean": float(b.mean()),
            "drop": float((a - b).mean()),
            "ci_low": None,
            "ci_high": None,
            "p_randomization": None,
            **coverage,
        }
        reasons = []
        try:
            row["ci_low"], row["ci_high"] = paired_bootstrap_ci(a, b, s.resamples, s.seed, s.confidence)
        except StatisticRefused as refused:
            reasons.append(refused.reason)
        try:
            row["p_randomization"] = paired_randomization_p(a, b, s.resamples, s.seed)
        except StatisticRefused as refused:
            reasons.append(refused.reason)
        row["refused"] = "; ".join(reasons) or None
        rows.append(row)
    return rows


def _coverage(judged: pl.DataFrame, tolerance: float) -> dict:
    """Both sides' mean Judged@k over their non-empty rankings, and whether they differ beyond ``tolerance``."""
    clean, variant = judged.get_column("clean").drop_nulls(), judged.get_column("variant").drop_nulls()
    c = float(clean.mean()) if clean.len() else None
    v = float(variant.mean()) if variant.len() else None
    return {
        "clean_judged": c,
        "variant_judged": v,
        "clean_ranked": clean.len(),
        "variant_ranked": variant.len(),
        "coverage_differs": None if c is None or v is None else round(abs(c - v), 12) > tolerance,
    }


def _with_holm(board: pl.DataFrame) -> pl.DataFrame:
    """Holm-adjusted p across the (kind, retriever) family of each tier and measure."""
    adjusted = [None] * board.height
    indexed = board.with_row_index("_i").filter(pl.col("p_randomization").is_not_null())
    for _, family in indexed.group_by("tier", "measure", maintain_order=True):
        for i, p in zip(family.get_column("_i").to_list(), holm(family.get_column("p_randomization").to_list())):
            adjusted[i] = p
    order = {"all": 0}
    return (
        board.with_columns(p_holm=pl.Series(adjusted, dtype=pl.Float64))
        .with_columns(_t=pl.col("tier").replace_strict(order, default=1, return_dtype=pl.Int8))
        .sort("_t", "tier", "kind", "retriever", "measure")
        .drop("_t")
        .select(list(BOARD_SCHEMA))
    )
