"""The mamaretrieval scoreboard's labels and measures: every retriever's ranking is scored on the judged labels.

Inputs are the pipeline's tables: rankings (query_id, retriever, rank, chunk_id,
score), judgments (query_id, chunk_id, score 0..6), queries (query_id, tier).
A retriever added later (a configuration entry or a TREC run file) is scored on
the labels that exist: chunks nobody judged count as not relevant, and its
Judged@k says how much of its ranking the labels cover. Nothing is re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from mama_pipeline.evaluation._scoreboard_measures import MeasurePlan, mamaretrieval_plan
from mama_pipeline.evaluation.settings import EvaluationSettings


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
