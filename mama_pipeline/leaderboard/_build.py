"""A benchmark's leaderboards from its tracks' inputs and the settings: what each track measures, the tables,
and the folder's facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from mama_pipeline.common.held_out import RULE, HeldOutRule
from mama_pipeline.common.progress import track as track_progress
from mama_pipeline.evaluation import label_of, mamaretrieval_plan, measure_names, zero_one_measures
from mama_pipeline.leaderboard._board import Stats, build_track, judged_measure, part_of_values
from mama_pipeline.leaderboard._board_standings import resamples_for
from mama_pipeline.leaderboard._leaderboard_inputs import BENCHMARK_TRACKS, TrackInput
from mama_pipeline.store.table_schema import table_schema

PER_QUERY_SCHEMA = table_schema("leaderboard_per_query", without=("benchmark",))
ANSWER_MEASURE = "score"  # the per-item value of every mamabench track (submission_per_query's measure)
ANSWER_LABELS = {
    "mcq": "accuracy (score = 1 correct, 0 wrong or invalid)",
    "short_answer": "mean grade (score = 1 / 0.5 / 0)",
    "rubric": "mean HealthBench example score (not clipped)",
}


@dataclass(frozen=True)
class TrackSpec:
    measures: list[str]  # headline first
    binary: set[str] = field(default_factory=set)  # 0/1 by definition: exact McNemar beside the randomization test
    judged: dict[str, str] = field(default_factory=dict)  # measure -> its Judged@k
    labels: dict[str, str] = field(default_factory=dict)  # measure -> its paper label (evaluation.measure_names)


@dataclass
class Leaderboard:
    entries: pl.DataFrame  # board.ENTRY_SCHEMA
    comparisons: pl.DataFrame  # board.COMPARISON_SCHEMA
    per_query: pl.DataFrame  # PER_QUERY_SCHEMA


def _headline_first(headline: str, measures: list[str]) -> list[str]:
    return [headline, *(m for m in measures if m != headline)]


def retrieval_specs(s) -> dict[str, TrackSpec]:
    """main and robustness: evaluation.significance_measures (headline evaluation.headline_measure first);
    multipassage: multipassage.significance_measures (headline multipassage.headline_measure first)."""
    ev, mp = s.evaluation, s.multipassage
    names = measure_names(mamaretrieval_plan(ev.cutoffs, ev.lenient, ev.strict, ev.max_grade))
    main = _headline_first(ev.headline_measure, ev.significance_measures)
    multi = _headline_first(mp.headline_measure, mp.significance_measures)

    def spec(measures: list[str]) -> TrackSpec:
        binary = zero_one_measures(measures)
        judged = {m: judged_measure(m, ev.cutoffs) for m in measures}
        return TrackSpec(measures, binary, judged, {m: label_of(m, names) for m in [*measures, *judged.values()]})

    return {"main": spec(main), "robustness": spec(main), "multipassage": spec(multi)}


def answer_specs() -> dict[str, TrackSpec]:
    return {t: TrackSpec([ANSWER_MEASURE], {ANSWER_MEASURE} if t == "mcq" else set()) for t in ANSWER_LABELS}


def build_benchmark(
    benchmark: str,
    inputs: dict[str, TrackInput],
    specs: dict[str, TrackSpec],
    stats: Stats,
    rule: HeldOutRule | None,
    split_keys: dict[str, pl.Expr] | None = None,
) -> Leaderboard:
    """Every track of the benchmark (in BENCHMARK_TRACKS order), side by side; ``split_keys``: per track, the id
    the held-out rule hashes (default the query id)."""
    entries, comps, values = [], [], []
    tracks = BENCHMARK_TRACKS[benchmark]
    with track_progress(f"{benchmark} leaderboards", total=len(tracks), unit="tracks", heartbeat=True) as bar:
        for track in tracks:
            got, spec = inputs[track], specs[track]
            split_key = (split_keys or {}).get(track)
            e, c = build_track(
                track, got.entries, got.values, spec.measures, spec.binary, stats, spec.judged, rule, split_key
            )
            entries.append(e)
            comps.append(c)
            used = got.values.filter(
                pl.col("measure").is_in([*spec.measures, *spec.judged.values()])
                & pl.col("entry_id").is_in([x.entry_id for x in got.entries if x.refused is None])
            )
            values.append(used.with_columns(pl.lit(track).alias("track"), part_of_values(used, rule, split_key)))
            bar.update()
    per_query = (
        pl.concat(values)
        .select(list(PER_QUERY_SCHEMA))
        .cast(PER_QUERY_SCHEMA)
        .sort("track", "entry_id", "query_id", "measure")
    )
    return Leaderboard(pl.concat(entries), pl.concat(comps), per_query)


def facts(benchmark: str, stats: Stats, rule: HeldOutRule | None, specs: dict[str, TrackSpec]) -> dict[str, Any]:
    """What leaderboard.json states beside the tracks: the statistics, the held-out rule, the measures' meaning."""
    held = rule is not None and rule.active
    out: dict[str, Any] = {
        "alpha": stats.alpha,
        "confidence": stats.confidence,
        "resamples": stats.resamples,
        "seed": stats.seed,
        "statistics": (
            f"{stats.confidence:.0%} BCa bootstrap intervals of each mean (scipy.stats.bootstrap over the entry's "
            f"values sorted by query id, {stats.resamples} resamples, seed {stats.seed}). Standings: a step-down "
            "range permutation test (scipy.stats.permutation_test, permutation_type 'samples'; each unit's "
            "values shuffled among the entries; the range of the entries' means; "
            f"{resamples_for(stats.resamples, stats.alpha)} resamples, seed {stats.seed}): while p < "
            f"{stats.alpha} the entry with the lowest mean is below best and the rest are tested again, p the "
            "largest so far; the others are tied with best, or not separable at this n where the smallest "
            f"attainable p (per track: standings) is >= {stats.alpha}. Every two entries are also compared "
            f"with a paired randomization test on the {'queries' if benchmark == 'mamaretrieval' else 'items'} "
            "both have a value for (exact McNemar too on 0/1 measures), Holm across every pair of a track and "
            "measure: a descriptive matrix."
        ),
        "measure_labels": {m: label for s in specs.values() for m, label in sorted(s.labels.items())},
        "held_out": {"rule": RULE, "share": rule.share, "salt": rule.salt, "id": rule.id_field} if held else None,
        "measures": (
            {t: s.measures for t, s in specs.items()}
            if benchmark == "mamaretrieval"
            else {t: f"{ANSWER_MEASURE}: {ANSWER_LABELS[t]}" for t in specs}
        ),
    }
    if held:
        out["held_out_note"] = (
            "Every figure, test and tie is of the public part (the per-query files hold public "
            "queries only); beside it: the held-out part's mean, the gap (public - held out) and "
            "an unpaired permutation test. A large positive gap suggests the public part was "
            "seen in training."
        )
    return out


def measures_of(specs: dict[str, TrackSpec]) -> dict[str, list[str]]:
    return {t: s.measures for t, s in specs.items()}
