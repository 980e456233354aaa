"""Each track's entries and per-query values, gathered from the areas that compute them.

Configured entries: retrievers from ``per_query_results`` (main), the robustness area's per-variant values
(``robustness_per_query``, the variant side, keyed by variant id), and ``multipassage_per_query`` (of each
per-query table only the track's measures and their Judged@k are read); systems from ``system_grades`` of the
configured systems (the scored items' ``score``, the values the systems scoreboard's mean uses; none when no
system is configured), refused per (system, track) over a failure bound as the systems scoreboard refuses them.
Submissions: the submissions area's tables ``submissions``, ``submission_per_query`` and ``submission_tracks``
(none when no submission was ever scored: zero rows).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import polars as pl

from mama_pipeline.leaderboard._board import VALUES_SCHEMA, Entry

RETRIEVAL_TRACKS = ("main", "robustness", "multipassage")
ANSWER_TRACKS = ("mcq", "short_answer", "rubric")
BENCHMARK_TRACKS = {"mamaretrieval": RETRIEVAL_TRACKS, "mamabench": ANSWER_TRACKS}
CONFIGURED, SUBMISSION = "configured", "submission"
SUBMISSION_TABLES = ("submissions", "submission_per_query", "submission_tracks")


@dataclass
class TrackInput:
    entries: list[Entry]
    values: pl.DataFrame  # VALUES_SCHEMA


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=VALUES_SCHEMA)


def configured(per_query: pl.DataFrame, name_column: str, refused: dict[str, str] | None = None) -> TrackInput:
    """Configured entries from a long table (``name_column``, query_id, measure, value)."""
    refused = refused or {}
    names = sorted(per_query[name_column].unique().to_list()) if per_query.height else []
    values = per_query.select(
        (pl.lit(f"{CONFIGURED}/") + pl.col(name_column)).alias("entry_id"),
        pl.col("query_id").cast(pl.String),
        "measure",
        pl.col("value").cast(pl.Float64),
    )
    return TrackInput([Entry(f"{CONFIGURED}/{n}", CONFIGURED, n, refused.get(n)) for n in names], values)


def stored_per_query(store, table: str, measures: Collection[str]) -> pl.DataFrame:
    """(retriever, query_id, measure, value) of these ``measures`` only, from a stored per-query table, in its
    stored order."""
    return store.read_table(
        table, columns=["retriever", "query_id", "measure", "value"], where={"measure": sorted(measures)}
    )


def robustness_per_query(pairs: pl.DataFrame, variants: pl.DataFrame, needed: Collection[str]) -> pl.DataFrame:
    """(retriever, query_id = variant id, measure, value) from the robustness area's paired values; an error names
    the ``needed`` measures that the robustness area did not compute."""
    missing = sorted(set(needed) - set(pairs.get_column("measure").unique().to_list()))
    if pairs.height and missing:
        raise ValueError(f"robustness_per_query has no values of {missing}: re-materialise robustness_scoreboard")
    return pairs.join(variants.select("variant_id", "parent_id", "kind"), on=["parent_id", "kind"]).select(
        "retriever", pl.col("variant_id").alias("query_id"), "measure", pl.col("variant").alias("value")
    )


def system_per_query(grades: pl.DataFrame, track: str) -> pl.DataFrame:
    """(system, query_id = item id, measure 'score', value) of the items the systems scoreboard scores."""
    return grades.filter((pl.col("track") == track) & pl.col("score").is_not_null()).select(
        "system",
        pl.col("item_id").alias("query_id"),
        pl.lit("score").alias("measure"),
        pl.col("score").cast(pl.Float64).alias("value"),
    )


def submissions(store, track: str) -> TrackInput:
    """The submissions scored on ``track``: their values, or only the refusal where the track is refused."""
    if not all(store.table_exists(t) for t in SUBMISSION_TABLES):
        return TrackInput([], _empty())
    meta = store.read_table("submissions")
    tracks = store.read_table("submission_tracks").filter(pl.col("track") == track)
    names = dict(meta.select("submission_id", "name").iter_rows())
    entries = [
        Entry(f"{SUBMISSION}/{sid}", SUBMISSION, names.get(sid, sid), refused)
        for sid, refused in tracks.select("submission_id", "refused").sort("submission_id").iter_rows()
    ]
    values = (
        store.read_table("submission_per_query")
        .filter(pl.col("track") == track)
        .select((pl.lit(f"{SUBMISSION}/") + pl.col("submission_id")).alias("entry_id"), "query_id", "measure", "value")
    )
    return TrackInput(entries, values.cast(VALUES_SCHEMA))


def combine(*parts: TrackInput) -> TrackInput:
    entries = [e for p in parts for e in p.entries]
    ids = [e.entry_id for e in entries]
    if len(set(ids)) != len(ids):
        raise ValueError(f"leaderboard entries repeat ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    values = pl.concat([p.values.select(list(VALUES_SCHEMA)).cast(VALUES_SCHEMA) for p in parts])
    return TrackInput(entries, values.filter(pl.col("value").is_not_null()))
