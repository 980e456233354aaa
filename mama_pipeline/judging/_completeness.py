"""Pool completeness: recall of the main pool against every relevant chunk known.

On the audit queries, the relevant chunks known are the labelled pairs of the
main pool and of the wider audit pool that reach a cut; the main pool's recall
is the share of them it contains. Micro recall pools all relevant pairs;
macro recall averages per query over queries with at least one relevant chunk.
"""

from __future__ import annotations

import polars as pl

from mama_pipeline.store.table_schema import table_schema

RECALL_SCHEMA = table_schema("pool_completeness")


def pool_recall(
    main_pool: pl.DataFrame, audit_pool: pl.DataFrame, labels: pl.DataFrame, tiers: pl.DataFrame, cuts: dict[str, int]
) -> pl.DataFrame:
    """Recall table per scope (all, each tier) and cut.

    ``main_pool`` and ``audit_pool``: query_id, chunk_id. ``labels``: query_id,
    chunk_id, score for any pairs (only those of the audit queries are used).
    ``tiers``: query_id, tier.
    """
    audit_queries = (
        audit_pool.select("query_id").unique().join(tiers.select("query_id", "tier"), on="query_id", how="left")
    )
    main = main_pool.select("query_id", "chunk_id").unique().with_columns(in_main=pl.lit(True))
    known = (
        pl.concat([main_pool.select("query_id", "chunk_id"), audit_pool.select("query_id", "chunk_id")])
        .unique()
        .join(audit_queries, on="query_id")
        .join(labels.select("query_id", "chunk_id", "score"), on=["query_id", "chunk_id"])
        .join(main, on=["query_id", "chunk_id"], how="left")
        .with_columns(pl.col("in_main").fill_null(False))
    )
    rows = []
    scopes = [("all", audit_queries)] + [
        (str(t), audit_queries.filter(pl.col("tier") == t))
        for t in sorted(audit_queries.get_column("tier").drop_nulls().unique())
    ]
    for scope, qs in scopes:
        for cut, threshold in cuts.items():
            rel = known.join(qs.select("query_id"), on="query_id").filter(pl.col("score") >= threshold)
            per_query = rel.group_by("query_id").agg(pl.col("in_main").mean().alias("recall"))
            n_rel, n_in = rel.height, int(rel.get_column("in_main").sum())
            rows.append(
                {
                    "scope": scope,
                    "cut": cut,
                    "threshold": threshold,
                    "audit_queries": qs.height,
                    "queries_with_relevant": per_query.height,
                    "relevant_known": n_rel,
                    "relevant_in_main_pool": n_in,
                    "recall_micro": n_in / n_rel if n_rel else None,
                    "recall_macro": float(per_query.get_column("recall").mean()) if per_query.height else None,
                }
            )
    return pl.DataFrame(rows, schema=RECALL_SCHEMA)
