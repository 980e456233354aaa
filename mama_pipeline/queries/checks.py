"""Asset checks of the queries group."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.llm.failure_bounds import query_writer_failures
from mama_pipeline.queries._query_ids import ID_RE
from mama_pipeline.queries._rules import duplicate_key
from mama_pipeline.resources import SettingsResource


@dg.asset_check(
    asset=dg.AssetKey("generated_queries"),
    description="Query ids are unique and well formed; every question is non-empty, within the word limit and "
    "distinct; one query per seed chunk.",
)
def queries_follow_rules(settings: SettingsResource, generated_queries: pl.DataFrame) -> dg.AssetCheckResult:
    max_words = settings.get().queries.max_words
    texts = generated_queries.get_column("query_text").to_list()
    ids = generated_queries.get_column("query_id").to_list()
    problems = {
        "bad_ids": sum(ID_RE.match(q or "") is None for q in ids),
        "duplicate_ids": len(ids) - len(set(ids)),
        "duplicate_seeds": generated_queries.height - generated_queries.get_column("seed_chunk_id").n_unique(),
        "empty_texts": sum(not (t or "").strip() for t in texts),
        "too_long": sum(len((t or "").split()) > max_words for t in texts),
        "duplicate_texts": len(texts) - len({duplicate_key(t or "") for t in texts}),
    }
    return dg.AssetCheckResult(passed=not any(problems.values()), metadata={"queries": len(ids), **problems})


@dg.asset_check(
    asset=dg.AssetKey("query_gate_decisions"),
    description="Every sampled chunk got a valid answer from the gate; failures are listed, never defaulted.",
)
def no_gate_failures(query_gate_decisions: pl.DataFrame) -> dg.AssetCheckResult:
    failed = query_gate_decisions.filter(pl.col("status") == "llm_failed").select("seed_chunk_id", "source", "error")
    return dg.AssetCheckResult(
        passed=failed.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"decisions": query_gate_decisions.height, "failed": failed.height, "failures": md_table(failed)},
    )


@dg.asset_check(
    asset=dg.AssetKey("generated_queries"),
    additional_ins={"query_gate_decisions": dg.AssetIn("query_gate_decisions")},
    blocking=True,
    description="The share of sampled chunks whose query-writer answer failed stays under "
    "llm.query_writer.max_failure_rate; blocks everything built on the queries (the release refuses too).",
)
def query_writer_failure_rate_under_bound(
    settings: SettingsResource, generated_queries: pl.DataFrame, query_gate_decisions: pl.DataFrame
) -> dg.AssetCheckResult:
    stage = query_writer_failures(query_gate_decisions, settings.get().llm.query_writer.max_failure_rate)
    return dg.AssetCheckResult(passed=not stage.over, metadata={**stage.metadata(), "summary": stage.describe()})


CHECKS = [queries_follow_rules, no_gate_failures, query_writer_failure_rate_under_bound]
