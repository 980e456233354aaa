"""Per-query measure values and the scoreboard built from them.

ir_measures (pytrec_eval backend, and its ``judged`` provider for Judged@k)
computes every standard measure; only wHR@k and wP@k, which no library
provides, are computed here. pytrec_eval leaves out queries missing from the
run or the qrels, so the grid is completed explicitly: every benchmark query
gets a value for every retriever and measure, 0 where the retriever returned
nothing or no chunk qualifies, as a user would experience it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import ir_measures
import polars as pl

from mama_pipeline.common.slices import SLICE, id_slices
from mama_pipeline.evaluation._runs import check_qrels, check_run
from mama_pipeline.evaluation._scoreboard_measures import Measure, MeasurePlan
from mama_pipeline.store.table_schema import table_schema

PER_QUERY_SCHEMA = table_schema("per_query_results")
RunOf = Callable[[list[str]], pl.DataFrame]  # benchmark query ids -> their run rows, in any order
QrelsOf = Callable[[list[str]], pl.DataFrame]  # benchmark query ids -> their qrels (query_id, doc_id, relevance)


@dataclass
class Evaluation:
    """Per-query values for every (retriever, benchmark query, measure), and what was left out."""

    per_query: pl.DataFrame
    retrievers: list[str]
    query_ids: list[str]
    measures: list[Measure]
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows
    without_results: dict[str, int] = field(default_factory=dict)  # retriever -> queries it returned nothing for


def run_in(run: pl.DataFrame) -> RunOf:
    """A run held whole, read a slice of queries at a time."""
    return lambda ids: run.filter(pl.col("query_id").is_in(ids))


def qrels_in(qrels: pl.DataFrame) -> QrelsOf:
    """Qrels held whole, read a slice of queries at a time."""
    return lambda ids: qrels.filter(pl.col("query_id").is_in(ids))


def evaluate(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    query_ids: Sequence[str],
    plan: MeasurePlan,
    retrievers: Sequence[str] | None = None,
    run_source: str = "run",
    qrels_source: str = "qrels",
    slice_size: int = SLICE,
) -> Evaluation:
    """Score every retriever of ``run`` on the benchmark ``query_ids`` (see ``evaluate_slices``).

    Run rows of queries outside the benchmark are dropped and counted.
    """
    run = check_run(run, run_source)
    queries = pl.DataFrame({"query_id": list(query_ids)}, schema={"query_id": pl.String})
    outside = run.join(queries, on="query_id", how="anti").height
    run = run.join(queries, on="query_id", how="semi")
    names = list(retrievers) if retrievers is not None else list(dict.fromkeys(run["retriever"].to_list()))
    return evaluate_slices(run_in(run), qrels, query_ids, plan, names, run_source, qrels_source, slice_size, outside)


def evaluate_slices(
    run_of: RunOf,
    qrels: pl.DataFrame,
    query_ids: Sequence[str],
    plan: MeasurePlan,
    retrievers: Sequence[str],
    run_source: str = "run",
    qrels_source: str = "qrels",
    slice_size: int = SLICE,
    outside_rows: int = 0,
) -> Evaluation:
    """Score ``retrievers`` on the benchmark ``query_ids`` held as one frame (see ``per_query_blocks``).

    Qrels of queries outside the benchmark are dropped and counted, beside the caller's count of run rows outside
    it.
    """
    qrels = check_qrels(qrels, qrels_source)
    queries = pl.DataFrame({"query_id": list(query_ids)}, schema={"query_id": pl.String})
    dropped = {
        "run rows of queries outside the benchmark": outside_rows,
        "qrels of queries outside the benchmark": qrels.join(queries, on="query_id", how="anti").height,
    }
    qrels = qrels.join(queries, on="query_id", how="semi")
    answered: dict[str, int] = {}
    blocks = list(
        per_query_blocks(
            run_of, qrels_in(qrels), query_ids, plan, retrievers, run_source, qrels_source, slice_size, answered
        )
    )
    per_query = pl.concat(blocks) if blocks else pl.DataFrame(schema=PER_QUERY_SCHEMA)
    without = {name: len(query_ids) - n for name, n in answered.items()}
    return Evaluation(per_query, list(retrievers), list(query_ids), plan.measures(), dropped, without)


def per_query_blocks(
    run_of: RunOf,
    qrels_of: QrelsOf,
    query_ids: Sequence[str],
    plan: MeasurePlan,
    retrievers: Sequence[str],
    run_source: str = "run",
    qrels_source: str = "qrels",
    slice_size: int = SLICE,
    answered: dict[str, int] | None = None,
) -> Iterator[pl.DataFrame]:
    """Every (retriever, benchmark query, measure) value, in that order, a block per retriever and slice of
    ``slice_size`` queries.

    ``run_of`` and ``qrels_of`` give a slice's run rows and qrels, so only one slice of each is held; every
    measure is per query, so the library's per-query objects stay bounded by a slice too. ``answered`` is filled
    with each retriever's count of queries it returned rows for.
    """
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("benchmark query ids are not unique")
    names = list(retrievers)
    measures = plan.measures()
    weighted = [m for m in measures if m.family in ("wHR", "wP")]
    measure_index = pl.DataFrame({"measure": [m.name for m in measures]}, schema={"measure": pl.String})
    answered = {} if answered is None else answered
    for name in names:
        answered[name] = 0
        for part in id_slices(query_ids, slice_size):
            ids = pl.DataFrame({"query_id": part}, schema={"query_id": pl.String})
            part_run = check_run(run_of(part), run_source)
            unknown = set(part_run["retriever"].unique().to_list()) - set(names)
            if unknown:
                raise ValueError(f"run has retrievers {sorted(unknown)} that are not in {names}")
            part_run = part_run.filter(pl.col("retriever") == name)
            answered[name] += part_run["query_id"].n_unique()
            part_qrels = check_qrels(qrels_of(part), qrels_source)
            values = [_library_values(part_run, part_qrels, [name], measures)]
            if plan.max_grade is not None:
                values.append(_weighted_values(part_run, part_qrels, weighted, plan.max_grade))
            yield (
                ids.with_row_index("_q")
                .join(measure_index.with_row_index("_m"), how="cross")
                .with_columns(pl.lit(name, dtype=pl.String).alias("retriever"))
                .join(pl.concat(values, how="vertical"), on=["retriever", "query_id", "measure"], how="left")
                .sort("_q", "_m")
                .select("retriever", "query_id", "measure", pl.col("value").fill_null(0.0))
            )


def scoreboard(evaluation: Evaluation, qrels: pl.DataFrame, tiers: pl.DataFrame | None = None) -> pl.DataFrame:
    """Mean of each measure over the benchmark queries, robust measures first (see ``board_of``)."""
    return board_of(
        evaluation.measures,
        evaluation.retrievers,
        evaluation.query_ids,
        lambda name: evaluation.per_query.filter(pl.col("retriever") == name),
        best_labels(qrels),
        tiers,
    )


def best_labels(qrels: pl.DataFrame) -> pl.DataFrame:
    """(query_id, best): each labelled query's highest relevance."""
    return check_qrels(qrels).group_by("query_id").agg(pl.col("relevance").max().alias("best"))


def board_of(
    measures: list[Measure],
    retrievers: list[str],
    query_ids: list[str],
    values_of: Callable[[str], pl.DataFrame],
    best: pl.DataFrame,
    tiers: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Mean of each measure over the benchmark ``query_ids``, robust measures first; ``values_of`` gives a
    retriever's per-query values (one retriever's are held at a time).

    One block of rows with ``tier`` "all", then one per tier when ``tiers``
    (query_id, tier) is given. ``queries_no_relevant``: queries of the block
    without any document qualifying under the measure's cut (they score 0); ``best`` (query_id, best) holds each
    labelled query's highest label.
    """
    meta = pl.DataFrame(
        [
            {
                "measure": m.name,
                "label": m.label,
                "family": m.family,
                "cut": m.cut,
                "rel": m.rel,
                "k": m.k,
                "position": m.position,
            }
            for m in measures
        ],
        schema={
            "measure": pl.String,
            "label": pl.String,
            "family": pl.String,
            "cut": pl.String,
            "rel": pl.Int64,
            "k": pl.Int64,
            "position": pl.Int64,
        },
    )
    segments = pl.DataFrame({"query_id": query_ids, "tier": "all"}, schema={"query_id": pl.String, "tier": pl.String})
    if tiers is not None:
        by_tier = (
            segments.select("query_id")
            .join(
                tiers.select(pl.col("query_id").cast(pl.String), pl.col("tier").cast(pl.String).fill_null("(none)")),
                on="query_id",
                how="left",
            )
            .with_columns(pl.col("tier").fill_null("(none)"))
        )
        segments = pl.concat([segments, by_tier.sort("tier", maintain_order=True)])
    tier_order = segments.select("tier").unique(maintain_order=True).with_row_index("_t")
    sizes = segments.group_by("tier").agg(pl.len().cast(pl.Int64).alias("n_queries"))
    means = pl.concat(
        [
            values_of(name)
            .join(segments, on="query_id")
            .group_by("retriever", "tier", "measure")
            .agg(pl.col("value").mean().alias("mean"))
            for name in retrievers
        ]
        or [pl.DataFrame(schema={"retriever": pl.String, "tier": pl.String, "measure": pl.String, "mean": pl.Float64})]
    )
    order = pl.DataFrame({"retriever": retrievers}).with_row_index("_r")
    return (
        means.join(meta, on="measure")
        .join(order, on="retriever")
        .join(tier_order, on="tier")
        .join(sizes, on="tier")
        .join(_queries_without_relevant(measures, best, segments), on=["tier", "measure"], how="left")
        .sort("_t", "_r", "position")
        .select(
            "tier",
            "retriever",
            "measure",
            "label",
            "family",
            "cut",
            "rel",
            "k",
            "position",
            "mean",
            "n_queries",
            "queries_no_relevant",
        )
    )


def wide_scoreboard(board: pl.DataFrame) -> pl.DataFrame:
    """One row per retriever, one column per measure label, in scoreboard order."""
    if "tier" in board.columns:
        board = board.filter(pl.col("tier") == "all")
    labels = board.sort("position")["label"].unique(maintain_order=True).to_list()
    wide = board.pivot(on="label", index="retriever", values="mean", maintain_order=True)
    return wide.select("retriever", *labels)


def _library_values(
    run: pl.DataFrame, qrels: pl.DataFrame, retrievers: list[str], measures: list[Measure]
) -> pl.DataFrame:
    trec = [m for m in measures if m.ir is not None and m.family != "Judged"]
    judged = [m for m in measures if m.family == "Judged"]
    qrels_dict = _qrels_dict(qrels)
    evaluators = []
    for provider, chosen in ((ir_measures.pytrec_eval, trec), (ir_measures.judged, judged)):
        if chosen:
            objects = [m.ir for m in chosen]
            names = {id(o): m.name for o, m in zip(objects, chosen)}
            evaluators.append((provider.evaluator(objects, qrels_dict), names))
    cols: dict[str, list] = {"retriever": [], "query_id": [], "measure": [], "value": []}
    for name in retrievers:
        run_dict = pytrec_run(run.filter(pl.col("retriever") == name))
        if not run_dict:
            continue
        for evaluator, names in evaluators:
            # The provider hook, not the public iter_calc: that one only adds defaults for queries absent
            # from the run, paying a repr-based hash per value (~20 s at release scale); the grid below
            # completes every (retriever, query, measure) itself.
            metrics = list(evaluator._iter_calc(run_dict))
            cols["query_id"].extend(x.query_id for x in metrics)
            # metrics carry the measure objects the evaluator was built with: look up by identity
            cols["measure"].extend(names.get(id(x.measure)) or str(x.measure) for x in metrics)
            cols["value"].extend(float(x.value) for x in metrics)
            cols["retriever"].extend([name] * len(metrics))
    return pl.DataFrame(cols, schema=PER_QUERY_SCHEMA)


def _weighted_values(run: pl.DataFrame, qrels: pl.DataFrame, measures: list[Measure], max_grade: int) -> pl.DataFrame:
    """wHR@k = best label / max grade in the top k; wP@k = mean of label / max grade over k slots."""
    if not measures or run.height == 0:
        return pl.DataFrame(schema=PER_QUERY_SCHEMA)
    gained = (
        run.join(qrels, on=["query_id", "doc_id"], how="left")
        .sort("retriever", "query_id", "rank")
        .with_columns(
            (pl.col("relevance").fill_null(0).clip(lower_bound=0) / max_grade).alias("gain"),
            (pl.int_range(pl.len()).over("retriever", "query_id") + 1).alias("pos"),
        )
    )
    parts = []
    for k in sorted({m.k for m in measures}):
        top = gained.filter(pl.col("pos") <= k).group_by("retriever", "query_id")
        parts.append(
            top.agg(pl.col("gain").max().alias(f"wHR@{k}"), (pl.col("gain").sum() / k).alias(f"wP@{k}")).unpivot(
                index=["retriever", "query_id"], variable_name="measure", value_name="value"
            )
        )
    wanted = [m.name for m in measures]
    return (
        pl.concat(parts)
        .filter(pl.col("measure").is_in(wanted))
        .select(pl.col(c).cast(t) for c, t in PER_QUERY_SCHEMA.items())
    )


def _queries_without_relevant(measures: list[Measure], best: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    with_best = segments.join(best, on="query_id", how="left").with_columns(pl.col("best").fill_null(0))
    parts = []
    for m in measures:
        if m.family == "Judged":
            continue
        threshold = m.rel if m.rel is not None else 1
        parts.append(
            with_best.group_by("tier")
            .agg((pl.col("best") < threshold).sum().cast(pl.Int64).alias("queries_no_relevant"))
            .with_columns(pl.lit(m.name).alias("measure"))
        )
    if not parts:
        return pl.DataFrame(schema={"tier": pl.String, "queries_no_relevant": pl.Int64, "measure": pl.String})
    return pl.concat(parts)


def _qrels_dict(qrels: pl.DataFrame) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, docs, rels in qrels.group_by("query_id", maintain_order=True).agg("doc_id", "relevance").iter_rows():
        out[q] = dict(zip(docs, rels))
    return out


def pytrec_run(run: pl.DataFrame) -> dict[str, dict[str, float]]:
    """Run as pytrec_eval wants it, with score = -rank so the evaluator keeps the retriever's order."""
    out: dict[str, dict[str, float]] = {}
    grouped = run.group_by("query_id", maintain_order=True).agg("doc_id", (-pl.col("rank").cast(pl.Float64)).alias("s"))
    for q, docs, scores in grouped.iter_rows():
        out[q] = dict(zip(docs, scores))
    return out
