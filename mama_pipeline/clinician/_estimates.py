"""Prediction-powered estimates of the pair-level measures from the judge's labels and the clinicians' labels.

P@k (lenient and strict cut) and wP@k of a retriever are means over its
top-k pairs: the pair's value (1 when its score reaches the cut; score / max
grade for wP) summed over the tier's queries' top k and divided by queries x k,
as the scoreboard computes them (a pair nobody labelled counts 0). The
judge-only figure takes the judge's score on every pair. The corrected figure
(``ppi_py.ppi_mean_ci`` and ``ppi_mean_pointestimate``, plain PPI: lambda = 1)
adds to it the mean clinician-minus-judge difference over the pairs of the
estimation sample (clinician.estimation_sample_size: pooled pairs drawn
uniformly at random) that fall in the same top-k, with a 95% interval that
carries both the judge's and the clinicians' sampling error (slightly
conservative: ppi_py treats the pairs as drawn from an unlimited population,
with no finite-population correction), clipped to the values the measure can
take. Restricted to one retriever's top-k, a uniform pool sample is a uniform
sample of those pairs.

Rules (each row says which applied): a cell whose top-k reaches below the pool
depth has pairs that were never judged or sampled, so no estimate; with no
estimation sample (the stratified agreement sample alone, whose equal
allocation across tier x judge score band strata is not used here) no estimate;
fewer than clinician.min_estimation_pairs sampled pairs with a clinicians'
majority label in the cell, no estimate; every labelled pair with one and the
same clinicians-minus-judge difference (every one agreeing with the judge, most
often), no estimate: the spread of the difference cannot be estimated, and the
interval would carry the judge's sampling error alone (with 30 pairs and a judge
over-calling 3% of pairs such "95%" intervals covered the truth in 85% of
simulated draws); an interval lying wholly outside the measure's range, no estimate. The
point estimate and the interval are clipped alike to the measure's range, so the
estimate lies inside its interval. Sampled pairs without a majority label are
counted in ``unresolved`` (``tied``: those whose annotators tied) and left out,
i.e. taken to be missing at random; beside the figure stand the estimates with
each tied pair counted at the lowest (``estimate_ties_low``) and at the highest
(``estimate_ties_high``) score its annotators gave. The calibration of the
interval is simulated in mama_pipeline_tests/clinician/test_ppi_calibration.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import polars as pl

from mama_pipeline.evaluation import Measure, MeasurePlan
from mama_pipeline.store.table_schema import table_schema

ALPHA = 0.05  # 95% intervals
ALL = "all"
ESTIMATED, REFUSED = "estimated", "refused"
UNIFORM, NONE = "uniform", "none"
FAMILIES = ("P", "wP")
ESTIMATE_JUDGMENT_COLUMNS = ["query_id", "chunk_id", "score"]  # what the estimates read of the judgments
ESTIMATE_SCHEMA = table_schema("clinician_estimates")
TIES_SCHEMA = {"query_id": pl.String, "chunk_id": pl.String, "low": pl.Int8, "high": pl.Int8}
EXPLANATION = (
    "The corrected figure is the judge-only figure plus the average difference between the clinicians' majority "
    "label and the judge's label on a uniform random sample of the same pairs (prediction-powered inference), so "
    "it estimates what the measure would be had clinicians labelled every pair. Its 95% interval is built to "
    "cover that value in 95 of 100 samples; an interval that excludes the judge-only figure says the judge's bias "
    "moved the figure by more than sampling error."
)


def _values(scores: np.ndarray, m: Measure, max_grade: int) -> np.ndarray:
    return (scores >= m.rel).astype(float) if m.family == "P" else scores / max_grade


def _ppi(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> tuple[float, float, float]:
    with warnings.catch_warnings():  # ppi_py silences every warning of the process when imported
        import ppi_py
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_all, lam=1))[0])
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_all, alpha=ALPHA, lam=1)
    return point, float(np.ravel(low)[0]), float(np.ravel(high)[0])


def corrected(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> tuple[float, float, float] | str:
    """(estimate, low, high) of the mean of ``y`` over the population ``yhat_all`` is the judge's values of, from
    the labelled pairs' ``y`` (clinicians) and ``yhat`` (judge), each clipped to 0..1; or why none."""
    if y.size < 2:
        return f"{y.size} labelled pairs: the spread of the clinicians-minus-judge difference needs at least 2"
    diff = y - yhat
    if np.all(diff == diff[0]):
        what = "agrees with the judge" if diff[0] == 0 else f"differs from the judge by {diff[0]:+.3f}"
        return (
            f"every one of the {y.size} labelled pairs {what}: the spread of the clinicians-minus-judge "
            "difference cannot be estimated, so the interval would carry the judge's sampling error alone"
        )
    point, low, high = _ppi(y, yhat, yhat_all)
    if high < 0.0 or low > 1.0:
        return f"the interval [{low:.4f}, {high:.4f}] lies outside the values the measure can take (0..1)"
    return min(max(point, 0.0), 1.0), max(low, 0.0), min(high, 1.0)


def _cell(top: pl.DataFrame, m: Measure, max_grade: int, queries: int, design: str, min_pairs: int) -> dict:
    """One (retriever, tier, measure) row; ``top`` holds the top-k pairs with judge, pooled, sampled, clinician."""
    slots = queries * m.k
    judge = _values(top["judge"].fill_null(0).to_numpy().astype(float), m, max_grade)
    sampled = top.filter(pl.col("sampled"))
    labelled = sampled.filter(pl.col("clinician").is_not_null())
    row = {
        "k": m.k,
        "queries": queries,
        "slots": slots,
        "pairs": top.height,
        "design": design,
        "judge_only": float(judge.sum() / slots) if slots else None,
        "sampled": sampled.height,
        "labelled": labelled.height,
        "unresolved": sampled.height - labelled.height,
        "tied": int((sampled["clinician"].is_null() & sampled["tie_low"].is_not_null()).sum()),
        "estimate": None,
        "ci_low": None,
        "ci_high": None,
        "estimate_ties_low": None,
        "estimate_ties_high": None,
        "status": REFUSED,
    }
    unpooled = int((~top["pooled"]).sum())
    if not top.height:
        return {**row, "reason": "no retrieved pairs in this cell"}
    if unpooled:
        return {
            **row,
            "reason": f"k = {m.k} reaches below the pool: {unpooled} of the {top.height} top-k pairs "
            "were never pooled, so never judged or sampled",
        }
    if design == NONE:
        return {
            **row,
            "reason": "no estimation sample (clinician.estimation_sample_size = 0); the stratified "
            "agreement sample supports none of these figures",
        }
    if labelled.height < min_pairs:
        return {
            **row,
            "reason": f"{labelled.height} sampled pairs with a clinicians' majority label; an estimate "
            f"needs at least {min_pairs} (clinician.min_estimation_pairs)",
        }
    y = _values(labelled["clinician"].to_numpy().astype(float), m, max_grade)
    yhat = _values(labelled["judge"].fill_null(0).to_numpy().astype(float), m, max_grade)
    got = corrected(y, yhat, judge)
    if isinstance(got, str):
        return {**row, "reason": got}
    scale = top.height / slots  # mean over pairs -> sum over queries x k slots
    tied = sampled.filter(pl.col("clinician").is_null() & pl.col("tie_low").is_not_null())
    each_way = {}
    for side in ("low", "high"):  # the tied pairs added with their annotators' lowest, then highest score
        y_side = np.concatenate([y, _values(tied[f"tie_{side}"].to_numpy().astype(float), m, max_grade)])
        yhat_side = np.concatenate([yhat, _values(tied["judge"].fill_null(0).to_numpy().astype(float), m, max_grade)])
        other = corrected(y_side, yhat_side, judge) if tied.height else got
        each_way[f"estimate_ties_{side}"] = None if isinstance(other, str) else other[0] * scale
    point, low, high = got
    return {
        **row,
        "estimate": point * scale,
        "ci_low": low * scale,
        "ci_high": high * scale,
        **each_way,
        "status": ESTIMATED,
        "reason": None,
    }


def tie_scores(labels: pl.DataFrame, tied_tasks: pl.DataFrame) -> pl.DataFrame:
    """Per tied relevance task (``tied_tasks``: task_key, query_id, chunk_id): the lowest and highest score its
    usable annotations gave (:data:`TIES_SCHEMA`)."""
    usable = labels.filter((pl.col("kind") == "relevance") & (pl.col("status") == "labelled"))
    return (
        usable.join(tied_tasks.select("task_key"), on="task_key", how="semi")
        .group_by("query_id", "chunk_id")
        .agg(pl.col("score").min().alias("low"), pl.col("score").max().alias("high"))
        .sort("query_id", "chunk_id")
        .cast(TIES_SCHEMA)
    )


def ppi_estimates(
    run_of: Callable[[str], pl.DataFrame],
    retrievers: list[str],
    queries: pl.DataFrame,
    pool: pl.DataFrame,
    judgments: pl.DataFrame,
    majority: pl.DataFrame,
    sampled: pl.DataFrame,
    plan: MeasurePlan,
    min_pairs: int,
    synthetic: bool = False,
    circularity: dict[str, str] | None = None,
    ties: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Judge-only and prediction-powered P@k and wP@k per retriever and tier ("all", then each tier).

    ``run_of(name)``: one retriever's run rows (query_id, doc_id, rank: a run, read one retriever at a time),
    for each of ``retrievers``; ``queries``: query_id, tier (the benchmark queries);
    ``pool``, ``sampled``: query_id, chunk_id (the pooled pairs, the estimation sample); ``judgments`` and
    ``majority``: query_id, chunk_id, score (the judge's labels, the clinicians' untied majority labels).
    ``circularity``: retriever -> a flag shown next to its figures; ``ties``: query_id, chunk_id, low, high (the
    lowest and highest score the annotators of a tied pair gave).
    """
    pair = ["query_id", "chunk_id"]
    design = UNIFORM if sampled.height else NONE
    tiers = queries.select("query_id", pl.col("tier").cast(pl.String).fill_null("(none)"))
    known = (  # the judge's score and the pooled flag of every judged or pooled pair
        pool.select(*pair)
        .unique()
        .with_columns(pooled=pl.lit(True))
        .join(judgments.select(*pair, pl.col("score").alias("judge")), on=pair, how="full", coalesce=True)
    )
    drawn = sampled.select(*pair).unique().with_columns(sampled=pl.lit(True))
    clinician = majority.select(*pair, pl.col("score").alias("clinician"))
    tied = (ties if ties is not None else pl.DataFrame(schema=TIES_SCHEMA)).select(
        *pair, pl.col("low").alias("tie_low"), pl.col("high").alias("tie_high")
    )
    segments = [(ALL, tiers)] + [(t, g) for (t,), g in sorted(tiers.group_by("tier"), key=lambda kv: kv[0][0])]
    measures = [m for m in plan.measures() if m.family in FAMILIES]
    flags = circularity or {}
    rows = []
    for retriever in sorted(retrievers):
        mine = (  # in the run's order (the store's): the sums below come out the same to the last bit, run after run
            run_of(retriever)
            .select("query_id", pl.col("doc_id").alias("chunk_id"), "rank")
            .join(tiers, on="query_id", how="inner", maintain_order="left")
            .join(known, on=pair, how="left", maintain_order="left")
            .join(drawn, on=pair, how="left", maintain_order="left")
            .join(clinician, on=pair, how="left", maintain_order="left")
            .join(tied, on=pair, how="left", maintain_order="left")
            .with_columns(pl.col("pooled", "sampled").fill_null(False))
        )
        for tier, members in segments:
            cell = mine.join(members.select("query_id"), on="query_id", how="semi", maintain_order="left")
            for m in measures:
                top = cell.filter(pl.col("rank") <= m.k)
                rows.append(
                    {
                        "retriever": retriever,
                        "tier": tier,
                        "measure": m.name,
                        "label": m.label,
                        **_cell(top, m, plan.max_grade, members.height, design, min_pairs),
                        "synthetic": synthetic,
                        "circularity": flags.get(retriever),
                    }
                )
    return pl.DataFrame(rows, schema=ESTIMATE_SCHEMA)
