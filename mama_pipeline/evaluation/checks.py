"""Asset checks of the evaluation group."""

import dagster as dg
import polars as pl

from mama_pipeline.common.shared_inputs import QUERIES


@dg.asset_check(asset="scoreboard", blocking=True, additional_ins={"queries": QUERIES})
def scoreboard_covers_every_query(scoreboard: pl.DataFrame, queries: pl.DataFrame) -> dg.AssetCheckResult:
    """Every retriever is scored on every benchmark query, for every measure."""
    overall = scoreboard.filter(pl.col("tier") == "all")
    wrong = overall.filter(pl.col("n_queries") != queries.height).height
    cells = overall.group_by("retriever").len()["len"].unique().to_list()
    return dg.AssetCheckResult(
        passed=wrong == 0 and len(cells) <= 1,
        metadata={"rows_with_wrong_query_count": wrong, "measures_per_retriever": str(cells)},
    )


@dg.asset_check(asset="significance", blocking=True, additional_ins={"scoreboard": dg.AssetIn("scoreboard")})
def significance_covers_every_pair(significance: pl.DataFrame, scoreboard: pl.DataFrame) -> dg.AssetCheckResult:
    """One row per measure and unordered pair of scored retrievers, p values in [0, 1]."""
    n = scoreboard["retriever"].n_unique()
    per_measure = significance.group_by("measure").len()["len"].to_list()
    expected = n * (n - 1) // 2
    p_ok = (
        bool(significance.select(pl.col("p_randomization_holm").is_between(0, 1).all()).item())
        if significance.height
        else True
    )
    return dg.AssetCheckResult(
        passed=all(x == expected for x in per_measure) and p_ok,
        metadata={"pairs_expected": expected, "pairs_per_measure": str(per_measure)},
    )


CHECKS = [scoreboard_covers_every_query, significance_covers_every_pair]
