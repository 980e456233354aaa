"""One track's leaderboard from per-query values: intervals, paired tests of every entry against every other, and
the entries the data place below the best.

Every figure reads the values in one declared order, sorted by query id: the order of the released per-query
files, so scipy on a file alone reproduces the figure. Per entry and measure: the mean over the entry's queries
(items) with scipy's BCa bootstrap interval (:func:`mama_pipeline.evaluation._significance.bootstrap_mean_ci`; none,
with its reason in ``ci_note``, where it cannot be computed). Per measure, every two entries are compared on the
queries both have a value for (:func:`mama_pipeline.evaluation._significance.pairwise_significance`: paired bootstrap
interval of the difference, paired randomization test, exact McNemar on 0/1 measures), Holm across every pair of
the track and measure: a descriptive matrix. The standings come from :mod:`mama_pipeline.leaderboard._board_standings`
(a step-down range permutation test over the entries, whole groups as units where the track has them): the best
(highest mean, first entry id among equals), then each entry below best, tied with best, not separable at this n,
or not compared (fewer than two units shared with the best). A refused entry (a track refused for a failure bound)
has no figures, only its reason; a statistic refused for its input (:class:`mama_pipeline.evaluation._significance.
StatisticRefused`) leaves its figure empty with the reason, and the board goes on.

With the held-out rule active, every figure above is of the public part, and beside it stand the held-out mean,
the gap (public - held out) and the unpaired permutation test of :mod:`mama_pipeline.evaluation._held_out_gaps`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from mama_pipeline.common.held_out import PUBLIC, HeldOutRule
from mama_pipeline.evaluation import StatisticRefused, bootstrap_mean_ci, holm, pairwise_significance, part_gaps
from mama_pipeline.leaderboard import _board_standings as bs
from mama_pipeline.store.table_schema import table_schema

VALUES_SCHEMA = {"entry_id": pl.String, "query_id": pl.String, "measure": pl.String, "value": pl.Float64}
ENTRY_SCHEMA = table_schema("leaderboard", without=("benchmark",))
COMPARISON_SCHEMA = table_schema("leaderboard_comparisons", without=("benchmark",))
REFUSED, NO_VALUES = "refused", "no values"
MIN_SHARED = 2  # a paired test needs two shared queries


@dataclass(frozen=True)
class Entry:
    entry_id: str  # "<source>/<name>": configured/<retriever or system> or submission/<submission_id>
    source: str  # configured | submission
    name: str  # what the table shows
    refused: str | None = None  # why the track's figures are refused (no figure is shown)


@dataclass(frozen=True)
class Stats:
    resamples: int
    seed: int
    confidence: float
    alpha: float


def judged_measure(measure: str, cutoffs: Sequence[int]) -> str:
    """The Judged@k beside a retrieval measure: k of the measure, else the deepest cutoff."""
    found = re.search(r"@(\d+)", measure)
    return f"Judged@{found.group(1) if found else max(cutoffs)}"


def _long(values: pl.DataFrame) -> pl.DataFrame:
    return values.select(pl.col("measure"), pl.col("entry_id").alias("retriever"), "query_id", "value")


def _compare(values: pl.DataFrame, measure: str, a: str, b: str, binary: bool, stats: Stats) -> dict:
    mine = values.filter(pl.col("measure") == measure)
    left = mine.filter(pl.col("entry_id") == a).select("query_id")
    shared = left.join(mine.filter(pl.col("entry_id") == b).select("query_id"), on="query_id")
    row = {"measure": measure, "entry_a": a, "entry_b": b, "n_shared": shared.height}
    if shared.height < MIN_SHARED:
        return row
    pair = _long(mine.filter(pl.col("entry_id").is_in([a, b])).join(shared, on="query_id", how="semi"))
    try:
        sig = pairwise_significance(
            pair,
            [measure],
            [a, b],
            n_resamples=stats.resamples,
            seed=stats.seed,
            confidence=stats.confidence,
            binary_measures={measure} if binary else set(),
        )
    except StatisticRefused as refused:
        return {**row, "refused": refused.reason}
    r = sig.row(0, named=True)
    return {
        **row,
        **{
            k: r[k]
            for k in (
                "mean_a",
                "mean_b",
                "diff",
                "ci_low",
                "ci_high",
                "p_randomization",
                "only_a",
                "only_b",
                "p_mcnemar",
            )
        },
    }


def comparisons(
    values: pl.DataFrame, entries: Sequence[str], measures: Sequence[str], binary: Collection[str], stats: Stats
) -> pl.DataFrame:
    """Every two entries (in id order) per measure on their shared queries; Holm across each measure's board."""
    rows = []
    for measure in measures:
        block = [
            _compare(values, measure, a, b, measure in binary, stats)
            for a, b in itertools.combinations(sorted(entries), 2)
        ]
        for test, out in (("p_randomization", "p_holm"), ("p_mcnemar", "p_mcnemar_holm")):
            for r, p in zip(block, holm([r.get(test) for r in block])):
                r[out] = p
        rows += block
    return pl.DataFrame(rows, schema={k: v for k, v in COMPARISON_SCHEMA.items() if k != "track"})


def _figures(values: np.ndarray, stats: Stats) -> dict:
    """n, mean and the BCa interval of one entry's values (in query id order); no interval, with the reason,
    where it cannot be computed."""
    out = {"n": int(values.size), "mean": float(values.mean()) if values.size else None}
    if not values.size:
        return out
    try:
        low, high = bootstrap_mean_ci(values, stats.resamples, stats.seed, stats.confidence)
    except StatisticRefused as refused:
        return {**out, "ci_note": refused.reason}
    if not (np.isfinite(low) and np.isfinite(high)):
        return {**out, "ci_note": "BCa interval undefined for these values"}
    return {**out, "ci_low": low, "ci_high": high}


def _standings(rows: list[dict], values: pl.DataFrame, measure: str, stats: Stats, unit: pl.Expr | None) -> None:
    """Each scored row of one measure: its standing (:mod:`board_standings`) and the test's facts, in place."""
    scored = {r["entry_id"]: r for r in rows if r["refused"] is None and r["n"]}
    if not scored:
        return
    mine = values.filter((pl.col("measure") == measure) & pl.col("entry_id").is_in(list(scored)))
    resamples = bs.resamples_for(stats.resamples, stats.alpha)
    placed, board = bs.standings(
        bs.per_unit(mine, unit), {e: r["mean"] for e, r in scored.items()}, resamples, stats.seed, stats.alpha
    )
    best = next(e for e, s in placed.items() if s.standing == bs.BEST)
    for e, r in scored.items():
        s = placed[e]
        r.update(
            standing=s.standing,
            best_entry_id=best,
            n_shared_with_best=s.n_shared,
            p_vs_best=s.p,
            standing_entries=board.entries,
            standing_units=board.units,
            standing_resamples=board.resamples,
            p_floor=board.p_floor,
        )


def build_track(
    track: str,
    entries: Sequence[Entry],
    values: pl.DataFrame,
    measures: Sequence[str],
    binary: Collection[str],
    stats: Stats,
    judged: dict[str, str] | None = None,
    rule: HeldOutRule | None = None,
    split_key: pl.Expr | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(entries table, comparisons table) of one track.

    ``values`` (VALUES_SCHEMA): every entry's non-null per-query values, Judged@k included for retrieval tracks;
    ``measures``: the track's measures, headline first; ``judged``: measure -> its Judged@k (retrieval only);
    ``rule``/``split_key``: the held-out rule and the id it hashes (default the query id), which is also the
    standing test's unit (a group of queries moves as one)."""
    values = (
        values.select(list(VALUES_SCHEMA))
        .cast(VALUES_SCHEMA)
        .filter(pl.col("value").is_not_null())
        .sort("entry_id", "measure", "query_id")  # the declared order of every figure: the per-query files'
    )
    values = values.filter(pl.col("entry_id").is_in([e.entry_id for e in entries if e.refused is None]))
    held = None
    if rule is not None and rule.active:
        key = (split_key if split_key is not None else pl.col("query_id")).alias("_key")
        parts = rule.part_of(values.select(key).to_series())
        tagged = values.with_columns(parts.alias("_part"))
        try:
            held = part_gaps(
                tagged.filter(pl.col("measure").is_in(list(measures))),
                ["entry_id", "measure"],
                "query_id",
                rule,
                stats.resamples,
                stats.seed,
                key=split_key,
            )
        except StatisticRefused as refused:
            held = refused.reason
        values = tagged.filter(pl.col("_part") == PUBLIC).drop("_part")
    comps = comparisons(values, [e.entry_id for e in entries if e.refused is None], measures, binary, stats)
    rows = []
    for i, measure in enumerate(measures):
        block = []
        for e in entries:
            row = {
                "track": track,
                "measure": measure,
                "measure_position": i,
                "headline": i == 0,
                "entry_id": e.entry_id,
                "source": e.source,
                "name": e.name,
                "refused": e.refused,
                "n": 0,
                "standing": REFUSED if e.refused else NO_VALUES,
            }
            if e.refused is None:
                mine = values.filter((pl.col("entry_id") == e.entry_id) & (pl.col("measure") == measure))
                row.update(_figures(mine["value"].to_numpy().astype(float), stats))
                if judged and measure in judged:
                    cover = values.filter((pl.col("entry_id") == e.entry_id) & (pl.col("measure") == judged[measure]))[
                        "value"
                    ]
                    row.update(
                        judged_measure=judged[measure],
                        judged_n=cover.len(),
                        judged_mean=float(cover.mean()) if cover.len() else None,
                    )
            if isinstance(held, str) and e.refused is None:
                row["gap_note"] = f"held-out gap refused: {held}"
            elif held is not None and e.refused is None:
                g = held.filter((pl.col("entry_id") == e.entry_id) & (pl.col("measure") == measure))
                if g.height:
                    g = g.row(0, named=True)
                    row.update(
                        n_held_out=g["n_held_out"],
                        mean_held_out=g["mean_held_out"],
                        gap=g["gap"],
                        p_gap=g["p_permutation"],
                        gap_note=g["note"],
                    )
            block.append(row)
        _standings(block, values, measure, stats, split_key)
        order = sorted(
            block, key=lambda r: (r["refused"] is not None, not r["n"], -(r.get("mean") or 0.0), r["entry_id"])
        )
        for pos, r in enumerate(order, 1):
            r["position"] = pos
        rows += order
    table = pl.DataFrame(rows, schema=ENTRY_SCHEMA)
    return table, comps.select(pl.lit(track).alias("track"), pl.all()).cast(COMPARISON_SCHEMA)


def part_of_values(values: pl.DataFrame, rule: HeldOutRule | None, split_key: pl.Expr | None = None) -> pl.Series:
    """``public`` or ``held_out`` per row of ``values`` (every row public without an active rule)."""
    if rule is None or not rule.active:
        return pl.Series("part", [PUBLIC] * values.height, dtype=pl.String)
    key = split_key if split_key is not None else pl.col("query_id")
    return rule.part_of(values.select(key.alias("_key")).to_series())
