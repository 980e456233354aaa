"""Asset checks of the retrieval group."""

import dagster as dg
import polars as pl

from mama_pipeline.common.slices import id_slices
from mama_pipeline.resources import StoreResource
from mama_pipeline.retrieval._retriever_rankings import ranking_violations
from mama_pipeline.retrieval._stored_rankings import RANKINGS_TABLE, StoredRankings
from mama_pipeline.retrieval.assets import INPUTS, pooled_pairs, rankings


@dg.asset_check(asset=pooled_pairs, blocking=True, additional_ins={"queries": INPUTS["queries"]})
def pool_covers_every_query(pooled_pairs: pl.DataFrame, queries: pl.DataFrame) -> dg.AssetCheckResult:
    """pool_size matches the pairs present (error); every query has at least one pair (warning)."""
    sizes = pooled_pairs.group_by("query_id").agg(n=pl.len(), pool_size=pl.col("pool_size").first())
    empty = queries.join(sizes, on="query_id", how="anti").height
    wrong = sizes.filter(pl.col("n") != pl.col("pool_size")).height
    severity = dg.AssetCheckSeverity.ERROR if wrong else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(
        passed=empty == 0 and wrong == 0,
        severity=severity,
        metadata={"queries_without_pairs": empty, "queries_with_wrong_pool_size": wrong},
    )


@dg.asset_check(asset=rankings, blocking=True)
def rankings_in_trec_eval_order(context: dg.AssetCheckExecutionContext, store: StoreResource) -> dg.AssetCheckResult:
    """Ranks run 1..n per query in (score desc, chunk_id desc) order, no chunk twice (the run's partition, or all)."""
    # a slice of queries at a time (a violation is within one retriever's ranking of one query)
    partitions = [context.partition_key] if context.has_partition_key else None
    db = store.get()
    rows = violations = 0
    for ids in id_slices(StoredRankings(db, partitions).query_ids()):
        stored = db.read_table(RANKINGS_TABLE, partitions=partitions, where={"query_id": ids})
        rows += stored.height
        violations += ranking_violations(stored).height
    return dg.AssetCheckResult(passed=violations == 0, metadata={"rows": rows, "violations": violations})


CHECKS = [pool_covers_every_query, rankings_in_trec_eval_order]
