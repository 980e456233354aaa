"""The mamaretrieval scoreboard: every retriever's ranking scored on the judged labels.

Inputs are the pipeline's tables: rankings (query_id, retriever, rank, chunk_id,
score), judgments (query_id, chunk_id, score 0..6), queries (query_id, tier).
A retriever added later (a configuration entry or a TREC run file) is scored on
the labels that exist: chunks nobody judged count as not relevant, and its
Judged@k says how much of its ranking the labels cover. Nothing is re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from mama_pipeline.evaluation.per_query_scoring import Evaluation, RunOf, evaluate_slices, scoreboard
from mama_pipeline.evaluation.scoreboard_measures import MeasurePlan, mamaretrieval_plan
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.evaluation.significance import pairwise_significance


@dataclass
class ScoreboardResult:
    evaluation: Evaluation
    board: pl.DataFrame
    significance: pl.DataFrame
    qrels: pl.DataFrame
    notes: dict[str, object] = field(default_factory=dict)


def judged_qrels(judgments: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Qrels (query_id, doc_id, relevance) from judgments; rows without a label are dropped and counted."""
    labelled = judgments
    dropped: dict[str, int] = {}
    if "status" in judgments.columns:
        labelled = judgments.filter(pl.col("status") == "labelled")
        dropped["judgments not labelled (status)"] = judgments.height - labelled.height
    no_score = labelled.filter(pl.col("score").is_null()).height
    if no_score:
        dropped["judgments without a score"] = no_score
    qrels = labelled.filter(pl.col("score").is_not_null()).select(
        pl.col("query_id").cast(pl.String),
        pl.col("chunk_id").cast(pl.String).alias("doc_id"),
        pl.col("score").cast(pl.Int64).alias("relevance"),
    )
    return qrels, dropped


def check_measures(names: list[str], known: Iterable[str], key: str) -> None:
    """A ValueError naming the setting ``key`` when a measure in ``names`` is not one of ``known``."""
    known = list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"{key}: unknown measures {unknown}; known: {known}")


def scoring_plan(settings: EvaluationSettings) -> MeasurePlan:
    """The scoreboard's measures; an error names a significance or headline measure that is not one of them."""
    plan = mamaretrieval_plan(settings.cutoffs, settings.lenient, settings.strict, settings.max_grade)
    check_measures(settings.significance_measures, plan.by_name(), "evaluation.significance_measures")
    check_measures([settings.headline_measure], plan.by_name(), "evaluation.headline_measure")
    return plan


def score_retrievers(
    run_of: RunOf,
    retrievers: list[str],
    judgments: pl.DataFrame,
    queries: pl.DataFrame,
    settings: EvaluationSettings,
    outside_rows: int,
) -> ScoreboardResult:
    """Scoreboard, per-query values and paired significance for every retriever.

    ``run_of`` gives the run rows (retriever, query_id, doc_id, rank) of a slice of queries (see
    ``evaluate_slices``): the rankings, and any run files evaluated without entering the pool; ``outside_rows``
    counts its rows of queries outside the benchmark.
    """
    plan = scoring_plan(settings)
    qrels, dropped = judged_qrels(judgments)
    query_ids = queries.sort("query_id")["query_id"].to_list()
    evaluation = evaluate_slices(
        run_of, qrels, query_ids, plan, retrievers, "rankings", "judgments", outside_rows=outside_rows
    )
    evaluation.dropped.update(dropped)
    tiers = queries.select("query_id", "tier") if "tier" in queries.columns else None
    board = scoreboard(evaluation, qrels, tiers)
    significance = pairwise_significance(
        evaluation.per_query,
        settings.significance_measures,
        retrievers,
        n_resamples=settings.resamples,
        seed=settings.seed,
        confidence=settings.confidence,
    )
    notes = {
        "queries": len(query_ids),
        "retrievers": retrievers,
        "queries_without_results": evaluation.without_results,
        "dropped": evaluation.dropped,
    }
    return ScoreboardResult(evaluation, board, significance, qrels, notes)
