"""The scoreboard's paired tests on a finished run's per-query table: each figure drawn alone against every pair
of every measure on one draw (``pairwise_significance``), side by side, and whether the figures are equal.

Reads ``ROOT/N<m>/data/mama.duckdb`` (read only) and ``ROOT/N<m>/config.yaml`` of ``benchmarks/paper_multiple.py``'s
work folders: the evaluation's significance measures, resamples, seed and confidence (the settings' defaults where
the file says nothing). "Alone" calls ``paired_bootstrap_ci`` and ``paired_randomization_p`` once a pair and
measure, as ``pairwise_significance`` did before it drew once for all of them: the draws of one size are kept
between calls only up to KEPT_DRAWS values (n x resamples), beyond it each figure draws its own. Wall seconds, best of ``--repeats``; state the load average
(printed first and last).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/significance_board.py --root /tmp/pm63 --multiple 1 10
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

import polars as pl
import yaml

from benchmarks.significance_speed import timed
from mama_pipeline.evaluation._scoreboard_measures import zero_one_measures
from mama_pipeline.evaluation._significance import (
    _KEPT,
    KEPT_DRAWS,
    StatisticRefused,
    paired_bootstrap_ci,
    paired_randomization_p,
    pairwise_significance,
)
from mama_pipeline.evaluation.settings import EvaluationSettings


def alone(per_query: pl.DataFrame, measures: list[str], retrievers: list[str], ev: dict) -> list[tuple]:
    """(measure, a, b, ci_low, ci_high, p) with one call a figure."""
    out = []
    for measure in measures:
        wide = per_query.filter(pl.col("measure") == measure).pivot(on="retriever", index="query_id", values="value")
        wide = wide.sort("query_id")
        for ra, rb in itertools.combinations(retrievers, 2):
            a, b = wide[ra].to_numpy().astype(float), wide[rb].to_numpy().astype(float)
            try:
                low, high = paired_bootstrap_ci(a, b, ev["resamples"], ev["seed"], ev["confidence"])
            except StatisticRefused:
                low = high = None
            try:
                p = paired_randomization_p(a, b, ev["resamples"], ev["seed"])
            except StatisticRefused:
                p = None
            out.append((measure, ra, rb, low, high, p))
    return out


def board(per_query, measures, retrievers, resamples, seed, confidence, binary) -> pl.DataFrame:
    return pairwise_significance(
        per_query,
        measures,
        retrievers,
        n_resamples=resamples,
        seed=seed,
        confidence=confidence,
        binary_measures=binary,
    )


def fresh(fn):
    """``fn`` called as a step's process calls it: nothing drawn yet."""

    def call(*args):
        _KEPT.clear()
        return fn(*args)

    return call


def main() -> None:
    import duckdb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--multiple", type=float, nargs="+", default=[1, 10])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(
        f"{'N':>4} {'queries':>8} {'figures':>8} {'n x resamples':>14} {'alone s':>8} {'one draw s':>11}  same figures"
    )
    for multiple in args.multiple:
        work = args.root / f"N{multiple:g}"
        ev = EvaluationSettings(**yaml.safe_load((work / "config.yaml").read_text())["evaluation"]).model_dump()
        measures = list(ev["significance_measures"])
        with duckdb.connect(str(work / "data" / "mama.duckdb"), read_only=True) as con:
            per_query = con.execute(
                "SELECT retriever, query_id, measure, value FROM per_query_results WHERE measure IN (SELECT unnest(?))",
                [measures],
            ).pl()
        retrievers = sorted(per_query["retriever"].unique())
        n = per_query["query_id"].n_unique()
        alone_s, one_by_one = timed(args.repeats, fresh(alone), per_query, measures, retrievers, ev)
        binary = zero_one_measures(measures)
        board_s, table = timed(
            args.repeats,
            fresh(board),
            per_query,
            measures,
            retrievers,
            ev["resamples"],
            ev["seed"],
            ev["confidence"],
            binary,
        )
        together = list(
            table.select("measure", "retriever_a", "retriever_b", "ci_low", "ci_high", "p_randomization").iter_rows()
        )
        same = together == one_by_one
        size = n * ev["resamples"]
        kept = "kept" if size <= KEPT_DRAWS else "not kept"
        print(
            f"{multiple:>4g} {n:>8,} {2 * len(together):>8} {size:>10,} ({kept}) {alone_s:>6.1f} {board_s:>11.1f}  {same}"
        )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
