"""The multi-passage scoreboard: track measures and the single-chunk headline measures, per tier, paired tests.

Every retriever's ranking of the verified questions is scored on the track's
qrels (:mod:`mama_pipeline.multipassage._multipassage_measures`: the facts qrels for the track
measures, the graded relevance labels for the headline measures); means per retriever for all
questions and per tier; paired tests between every two retrievers
(:func:`mama_pipeline.evaluation._significance.pairwise_significance`: bootstrap
CI, randomization test, exact McNemar on 0/1 measures, Holm across pairs), over
all questions and within each tier of at least ``min_tier_questions`` questions.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from mama_pipeline.evaluation import check_measures as check_named_measures
from mama_pipeline.evaluation import (
    evaluate,
    mamaretrieval_plan,
    pairwise_significance,
    rankings_to_run,
    zero_one_measures,
)
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.multipassage._multipassage_measures import (
    fact_qrels,
    graded_qrels,
    track_measure_names,
    track_values,
)
from mama_pipeline.multipassage.settings import MultipassageSettings
from mama_pipeline.store.table_schema import table_schema

BOARD_SCHEMA = table_schema("multipassage_scoreboard")
TRACK_SIGNIFICANCE_SCHEMA = table_schema("multipassage_significance")
MIN_TIER_QUESTIONS = 2


@dataclass
class TrackScores:
    per_query: pl.DataFrame  # evaluation._per_query_scoring.PER_QUERY_SCHEMA
    board: pl.DataFrame  # BOARD_SCHEMA
    significance: pl.DataFrame  # TRACK_SIGNIFICANCE_SCHEMA
    qrels: pl.DataFrame  # the graded qrels
    facts: pl.DataFrame  # the facts (diversity) qrels
    measures: list[str]
    retrievers: list[str]


def measure_names(mp: MultipassageSettings, ev: EvaluationSettings) -> tuple[list[str], list[str]]:
    """(track measures, headline measures) in scoreboard order."""
    plan = mamaretrieval_plan(ev.cutoffs, ev.lenient, ev.strict, ev.max_grade)
    return track_measure_names(mp.cutoffs, mp.alpha), [m.name for m in plan.measures()]


def check_measures(mp: MultipassageSettings, ev: EvaluationSettings) -> None:
    track, headline = measure_names(mp, ev)
    for key, names in (
        ("significance_measures", mp.significance_measures),
        ("headline_measure", [mp.headline_measure]),
    ):
        check_named_measures(names, track + headline, f"multipassage.{key}")


def score_track(
    rankings: pl.DataFrame,
    labels: pl.DataFrame,
    fact_labels: pl.DataFrame,
    questions: pl.DataFrame,
    retrievers: list[str],
    mp: MultipassageSettings,
    ev: EvaluationSettings,
) -> TrackScores:
    """Scores of ``retrievers`` on the verified ``questions`` (query_id, chunk_ids, fact_chunk_ids, tier).

    ``labels``: relevance labels (query_id, chunk_id, score); ``fact_labels``: facts stated (query_id, chunk_id,
    facts), both only the pairs labelled."""
    check_measures(mp, ev)
    track, headline = measure_names(mp, ev)
    questions = questions.sort("query_id")
    qids = questions["query_id"].to_list()
    run = rankings_to_run(rankings.filter(pl.col("query_id").is_in(qids)))
    qrels = graded_qrels(labels, questions, ev.lenient)
    plan = mamaretrieval_plan(ev.cutoffs, ev.lenient, ev.strict, ev.max_grade)
    single = evaluate(run, qrels, qids, plan, retrievers, "multipassage rankings", "multipassage labels").per_query
    facts = fact_qrels(questions, fact_labels)
    per_query = pl.concat([track_values(run, facts, qids, retrievers, mp.cutoffs, mp.alpha), single])
    order = {m: i for i, m in enumerate(track + headline)}
    segments = pl.concat(
        [
            questions.select("query_id", tier=pl.lit("all")),
            questions.select("query_id", pl.col("tier").fill_null("(none)")).sort("tier", "query_id"),
        ]
    )
    board = (
        per_query.join(segments, on="query_id")
        .group_by("tier", "retriever", "measure")
        .agg(pl.col("value").mean().alias("mean"), pl.len().cast(pl.Int64).alias("n_queries"))
        .with_columns(
            position=pl.col("measure").replace_strict(order, return_dtype=pl.Int64),
            track=pl.col("measure").is_in(track),
        )
    )
    tier_rank = {t: i for i, t in enumerate(["all", *sorted(set(questions["tier"].fill_null("(none)").to_list()))])}
    board = (
        board.with_columns(
            _t=pl.col("tier").replace_strict(tier_rank, return_dtype=pl.Int64),
            _r=pl.col("retriever").replace_strict({r: i for i, r in enumerate(retrievers)}, return_dtype=pl.Int64),
        )
        .sort("_t", "_r", "position")
        .select(list(BOARD_SCHEMA))
        .cast(BOARD_SCHEMA)
    )
    return TrackScores(
        per_query,
        board,
        _significance(per_query, segments, retrievers, mp, ev),
        qrels,
        facts,
        track + headline,
        retrievers,
    )


def _significance(
    per_query: pl.DataFrame,
    segments: pl.DataFrame,
    retrievers: list[str],
    mp: MultipassageSettings,
    ev: EvaluationSettings,
) -> pl.DataFrame:
    frames = [pl.DataFrame(schema=TRACK_SIGNIFICANCE_SCHEMA)]
    if len(retrievers) < 2:
        return frames[0]
    wanted = per_query.filter(pl.col("measure").is_in(mp.significance_measures))
    for (tier,), ids in segments.group_by("tier", maintain_order=True):
        if ids.height < (1 if tier == "all" else MIN_TIER_QUESTIONS):
            continue
        part = wanted.join(ids.select("query_id"), on="query_id", how="semi")
        sig = pairwise_significance(
            part,
            mp.significance_measures,
            retrievers,
            n_resamples=ev.resamples,
            seed=ev.seed,
            confidence=ev.confidence,
            binary_measures=zero_one_measures(mp.significance_measures),
        )
        frames.append(sig.select(pl.lit(tier).alias("tier"), pl.all()))
    return pl.concat(frames, how="vertical_relaxed").cast(TRACK_SIGNIFICANCE_SCHEMA)
