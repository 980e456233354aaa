"""Dagster assets of the answerability gate and query writer (group ``queries``)."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.queries._query_ids import assign_query_ids
from mama_pipeline.queries._query_prompt import answer_model, query_requests, query_writer_template
from mama_pipeline.queries._rules import gate_decisions, keep_rates, status_counts
from mama_pipeline.resources import LLMResource, SettingsResource, StoreResource

GROUP = "queries"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "generated_queries": "llm.embedded_server llm.query_writer queries.max_words",
    "query_gate_decisions": "llm.embedded_server llm.query_writer queries.max_words",
}
REGISTRY_TABLE = "query_id_registry"
QUERY_COLUMNS = [
    "query_id",
    "query_text",
    "seed_chunk_id",
    "source",
    "tier",
    "model",
    "prompt_hash",
    "temperature",
    "reason",
    "corpus_version",
]


@dg.multi_asset(
    group_name=GROUP,
    ins={"sampled_chunks": dg.AssetIn("sampled_chunks")},
    outs={
        "query_gate_decisions": dg.AssetOut(
            description="The gate's decision for every sampled chunk: kept, not_answerable, empty_query, too_long, "
            "duplicate_query or llm_failed, with the model's reason.",
        ),
        "generated_queries": dg.AssetOut(
            description="Kept queries with stable ids q_00001..., seed chunk, source, tier, model and prompt hash.",
        ),
    },
)
def generated_queries(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    llm: LLMResource,
    sampled_chunks: pl.DataFrame,
):
    s = settings.get()
    stage = s.llm.query_writer
    reasoning_field = stage.reasoning == "json_field"
    template = query_writer_template(s.queries.max_words, reasoning_field)
    with llm.client("query_writer", context) as client:
        report = client.run(template, answer_model(reasoning_field), query_requests(sampled_chunks, template))
    decisions = gate_decisions(
        sampled_chunks,
        report.results,
        max_words=s.queries.max_words,
        model=report.model,
        prompt_hash=template.hash,
        temperature=stage.temperature,
    )
    kept = decisions.filter(pl.col("status") == "kept")
    db = store.get()
    registry = db.read_table(REGISTRY_TABLE) if db.table_exists(REGISTRY_TABLE) else None
    ids, registry = assign_query_ids(kept.get_column("seed_chunk_id").to_list(), registry)
    queries = (
        kept.with_columns(pl.col("seed_chunk_id").replace_strict(ids, return_dtype=pl.String).alias("query_id"))
        .select(QUERY_COLUMNS)
        .sort(pl.col("query_id").str.slice(2).cast(pl.Int64))
    )
    db.write_table(REGISTRY_TABLE, registry)

    version = sampled_chunks.get_column("corpus_version")[0] if sampled_chunks.height else None
    counts = status_counts(decisions)
    common = {
        "corpus_version": version,
        "prompt_hash": template.hash,
        "model": report.model,
        "temperature": stage.temperature,
        "max_words": s.queries.max_words,
    }
    by_tier = keep_rates(decisions, "tier")
    by_source = keep_rates(decisions, "source")
    yield dg.Output(
        decisions,
        output_name="query_gate_decisions",
        metadata={
            **common,
            **report.metadata(),
            **{f"status/{k}": v for k, v in counts.items()},
            "keep_rate": round(counts["kept"] / decisions.height, 4) if decisions.height else 0.0,
            "keep_rate_by_tier": md_table(by_tier),
            "keep_rate_by_source": md_table(by_source, 200),
        },
    )
    yield dg.Output(
        queries,
        output_name="generated_queries",
        metadata={**common, "queries": queries.height, "keep_rate_by_tier": md_table(by_tier)},
    )
