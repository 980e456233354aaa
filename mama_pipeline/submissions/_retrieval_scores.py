"""A submitted run scored like the configured retrievers, track by track, after its holes are judged.

Tracks and their queries: ``main`` (the benchmark's queries), ``robustness`` (the variants; a variant's labels
are its parent's, as in :mod:`mama_pipeline.robustness._labels`) and ``multipassage`` (the verified questions).
A track is scored when the run covers at least one of its queries, on every query of the track (a query the
run returned nothing for scores 0, as for the configured retrievers).

Holes: (information need, chunk) pairs in the run's top-k of a track outside the labels of the track's pool
(and, on the robustness track, of the holes the configured retrievers opened); k is the depth to
which the configured retrievers of that track are judged (``retrieval.pool_depth``, the robustness track's
``judge_depth``, ``multipassage.pool_depth``). They are judged with the configured judge and prompt
(:func:`mama_pipeline.judging._judge.judge_pairs`, which reuses the label store; on the multi-passage track
also :func:`mama_pipeline.multipassage._fact_labels.label_facts`), and the run is then scored on the labels that
exist with the configured measures (``evaluation`` cutoffs and cuts, Judged@k at every cutoff). A track whose
holes the judge failed on more often than ``llm.judge.max_failure_rate`` is refused: unlabelled pairs would count
as non-relevant. Counted per track: ``n_holes_judged``, the holes labelled (asked now, or taken from the label
store where an earlier submission or a re-score had them judged, so the count does not change on re-scoring);
``n_grade_failed``, the holes the judge could not label; ``n_unanswered``, queries the run returned nothing for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from mama_pipeline.evaluation import evaluate, judged_qrels, mamaretrieval_plan
from mama_pipeline.llm.failure_bounds import pair_label_failures
from mama_pipeline.multipassage import label_bounds, over_bound, score_track

RUN = "submission"  # the run's retriever name inside the scoring functions
TRACK_ORDER = ("main", "robustness", "multipassage")
PAIR = ["query_id", "chunk_id"]


@dataclass
class TrackInputs:
    """One track's queries and the labels that exist for it (configured retrievers' pools and earlier holes)."""

    name: str
    query_ids: list[str]
    need_of: dict[str, str]  # query id -> the query whose labels it uses (a variant's parent; itself otherwise)
    labels: pl.DataFrame  # (query_id of the need, chunk_id, score), labelled pairs only
    depth: int
    facts: pl.DataFrame | None = None  # multipassage: (query_id, chunk_id, facts), labelled pairs only
    questions: pl.DataFrame | None = None  # multipassage: the verified questions


@dataclass
class TrackResult:
    per_query: pl.DataFrame  # (track, query_id, measure, value)
    counts: dict[str, int | str | None]


def tracks_covered(run: pl.DataFrame, tracks: list[TrackInputs]) -> list[TrackInputs]:
    """The tracks with at least one query in the run."""
    ids = set(run["query_id"].to_list())
    return [t for t in tracks if ids & set(t.query_ids)]


def holes(run: pl.DataFrame, track: TrackInputs) -> pl.DataFrame:
    """(query_id of the need, chunk_id) in the run's top ``depth`` of the track's queries without a label."""
    need = pl.DataFrame(
        {"query_id": list(track.need_of), "need": list(track.need_of.values())},
        schema={"query_id": pl.String, "need": pl.String},
    )
    top = run.filter(pl.col("rank") <= track.depth).join(need, on="query_id", how="inner")
    return (
        top.select(pl.col("need").alias("query_id"), pl.col("doc_id").alias("chunk_id"))
        .unique()
        .join(track.labels.select(PAIR), on=PAIR, how="anti")
        .sort(PAIR)
    )


def score_track_run(
    run: pl.DataFrame, track: TrackInputs, relevance: pl.DataFrame, facts: pl.DataFrame | None, ev, mp, bound: float
) -> TrackResult:
    """Per-query values of the run on one track, given the judge's outcomes for its holes.

    ``relevance``: judge outcomes (query_id, chunk_id, status, score) of the track's holes; ``facts``: fact-label
    outcomes of the multi-passage holes (query_id, chunk_id, status, facts).
    """
    new = relevance.filter(pl.col("status") == "labelled").select(*PAIR, "score")
    labels = pl.concat([track.labels.select(*PAIR, "score"), new], how="vertical_relaxed").unique(PAIR, keep="first")
    mine = run.filter(pl.col("query_id").is_in(track.query_ids))
    if track.name == "multipassage":
        fact_labels = pl.concat(
            [track.facts.select(*PAIR, "facts"), facts.filter(pl.col("status") == "labelled").select(*PAIR, "facts")],
            how="vertical_relaxed",
        ).unique(PAIR, keep="first")
        rankings = mine.select("query_id", pl.lit(RUN).alias("retriever"), "rank", pl.col("doc_id").alias("chunk_id"))
        per_query = score_track(rankings, labels, fact_labels, track.questions, [RUN], mp, ev).per_query
        failures = label_bounds(relevance, facts, bound)
    else:
        need = pl.DataFrame({"query_id": list(track.need_of), "need": list(track.need_of.values())})
        qrels, _ = judged_qrels(labels.rename({"query_id": "need"}).join(need, on="need").drop("need"))
        plan = mamaretrieval_plan(ev.cutoffs, ev.lenient, ev.strict, ev.max_grade)
        per_query = evaluate(
            mine.with_columns(retriever=pl.lit(RUN)),
            qrels,
            sorted(track.query_ids),
            plan,
            [RUN],
            "submitted run",
            "labels",
        ).per_query
        failures = [pair_label_failures(relevance, f"{track.name} holes of this submission", bound)]
    answered = mine["query_id"].n_unique()
    refused = over_bound(failures)
    failed = [o.filter(pl.col("status") == "failed").select(PAIR) for o in (relevance, facts) if o is not None]
    per_query = per_query.select(pl.lit(track.name).alias("track"), "query_id", "measure", "value")
    if refused:  # counts stay; the figures are refused, not biased by unlabelled pairs
        per_query = per_query.with_columns(pl.lit(None, pl.Float64).alias("value"))
    return TrackResult(
        per_query,
        {
            "track": track.name,
            "n_items": len(track.query_ids),
            "n_scored": answered,
            "n_unanswered": len(track.query_ids) - answered,
            "n_invalid": 0,
            "n_grade_failed": pl.concat(failed).unique().height,  # holes without a label (relevance or facts)
            "n_holes_judged": int((relevance["status"] == "labelled").sum()) if relevance.height else 0,
            "refused": refused,
        },
    )


def judge_track_holes(
    run: pl.DataFrame,
    tracks: list[TrackInputs],
    judge: Callable[[TrackInputs, pl.DataFrame], pl.DataFrame],
    label_facts: Callable[[TrackInputs, pl.DataFrame], pl.DataFrame],
) -> dict[str, tuple[pl.DataFrame, pl.DataFrame | None]]:
    """Per track, the judge's outcomes for its holes (and the fact labels of the multi-passage ones)."""
    out = {}
    for track in tracks:
        pairs = holes(run, track)
        out[track.name] = (judge(track, pairs), label_facts(track, pairs) if track.name == "multipassage" else None)
    return out
