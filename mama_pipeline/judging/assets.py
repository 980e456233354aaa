"""Dagster assets of graded relevance judging (group ``judging``).

Inputs from other areas: ``pooled_pairs`` and ``audit_pool`` (query_id,
chunk_id, ...), ``queries`` (query_id, query_text, tier, ...) and ``corpus_chunks``
(chunk_id, text, source, page, corpus_version, ...). A judging step reads the chunks of the pairs it judges
from the store, and a shard only its own pooled pairs.
"""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import FAILURES_SHOWN, md_table
from mama_pipeline.common.shared_inputs import CHUNKS, QUERIES
from mama_pipeline.judging._adaptive_run import JUDGED_SET_SCHEMA, judge_adaptively, pool_arms
from mama_pipeline.judging._completeness import pool_recall
from mama_pipeline.judging._judge import JudgeRun, judge_pairs, stored_chunks
from mama_pipeline.judging._label_store import orphaned_labels
from mama_pipeline.judging._reliability import AGREEMENT_COLUMNS, pilot_sample, reference_audits, stored_judges
from mama_pipeline.judging._rubric import output_model
from mama_pipeline.judging._sharding import require_loaded_shards, shard_query_ids
from mama_pipeline.judging._unjudged_estimate import unjudged_estimates
from mama_pipeline.llm.reference_audit import audit_title, reference_judge_stages
from mama_pipeline.resources import LLMResource, SettingsResource, StoreResource
from mama_pipeline.settings import config_path_from_env
from mama_pipeline.store import PARTITION_COLUMN

GROUP = "judging"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "judged_set": "judging llm.embedded_server llm.judge retrieval.pool_depth",
    "judged_labels": "judging.batch_pairs judging.shards judging.strategy llm.embedded_server llm.judge",
    "unjudged_estimate": "judging.lenient_cut judging.strategy judging.strict_cut",
    "judgments": "",
    "judging_failures": "",
    "orphaned_judgments": "",
    "judge_pilot_sample": "judging.lenient_cut judging.pilot_seed judging.pilot_size judging.strict_cut",
    "reference_judgments": "judging.batch_pairs llm",
    "judge_reliability": "judging.lenient_cut judging.strict_cut",
    "judge_confusion": "judging.lenient_cut judging.strict_cut",
    "audit_judgments": "judging.batch_pairs llm.embedded_server llm.judge",
    "pool_completeness": "judging.lenient_cut judging.strict_cut",
}
JUDGED_LABELS = "judged_labels"  # the per-shard asset and table that judgments and judging_failures gather
POOLED_PAIRS = "pooled_pairs"  # the retrieval group's asset and table: the pairs the shards judge
JUDGED_SET = "judged_set"  # the pairs adaptive judging asked (empty under judging.strategy full)
RANKINGS = "rankings"  # the retrieval group's asset and table: the runs the adaptive methods learn from


def _judge(
    context: dg.AssetExecutionContext,
    llm: LLMResource,
    settings: SettingsResource,
    store: StoreResource,
    stage: str,
    pairs: pl.DataFrame,
    queries: pl.DataFrame,
) -> JudgeRun:
    s = settings.get()
    with llm.client(stage, context) as client:
        run = judge_pairs(
            client,
            store.get(),
            pairs,
            queries,
            stored_chunks(store.get(), pairs),
            answer_model=output_model(getattr(s.llm, stage).reasoning),
            batch_pairs=s.judging.batch_pairs,
        )
    failures = run.outcomes.filter(pl.col("status") == "failed")
    for q, c, reason in failures.head(FAILURES_SHOWN).select("query_id", "chunk_id", "failure_reason").iter_rows():
        context.log.warning(f"{stage}: ({q}, {c}) failed: {reason}")
    return run


def _with_tier(outcomes: pl.DataFrame, queries: pl.DataFrame) -> pl.DataFrame:
    return outcomes.join(queries.select("query_id", "tier"), on="query_id", how="left")


@dg.asset(
    group_name=GROUP,
    description="The pooled pairs adaptive judging asked, in its order (role: round or remainder sample); empty "
    "under judging.strategy full, where the shards judge every pooled pair.",
    deps=[POOLED_PAIRS, RANKINGS, CHUNKS.key],
    ins={"queries": QUERIES},
)
def judged_set(
    context: dg.AssetExecutionContext,
    llm: LLMResource,
    settings: SettingsResource,
    store: StoreResource,
    queries: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    if s.judging.strategy == "full":
        return dg.Output(
            pl.DataFrame(schema=JUDGED_SET_SCHEMA),
            metadata={"strategy": "full", "note": "every pooled pair is judged by the judged_labels shards"},
        )
    from mama_pipeline.retrieval import StoredRankings

    db = store.get()
    pool = db.read_table(POOLED_PAIRS, columns=["query_id", "chunk_id", "retrievers"])
    if not db.table_exists(RANKINGS):
        raise dg.Failure(f"adaptive judging learns from the runs: table {RANKINGS!r} is not in {db.path}")
    ids = pool.get_column("query_id").unique().sort().to_list()
    ranked = pool_arms(pool, StoredRankings(db, None).top(s.retrieval.pool_depth, ids))
    with llm.client("judge", context) as client:
        run = judge_adaptively(client, db, pool, ranked, queries, s.judging, output_model(s.llm.judge.reasoning))
    context.log.info(f"adaptive judging: {run.metadata['stopped']}; {run.metadata['judged_pairs']} pairs asked")
    return dg.Output(run.judged, metadata=run.metadata)


@dg.asset(  # partitioned per query shard by build_defs (mama_pipeline.partitions)
    group_name=GROUP,
    description="Every pooled pair of one query shard, labelled by the judge, listed as failed with its reason, or "
    "(judging.strategy adaptive) unjudged: never a label.",
    deps=[POOLED_PAIRS, CHUNKS.key, JUDGED_SET],
    ins={"queries": QUERIES},
)
def judged_labels(
    context: dg.AssetExecutionContext,
    llm: LLMResource,
    settings: SettingsResource,
    store: StoreResource,
    queries: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    shards = s.judging.shards
    try:
        loaded = len(context.assets_def.partitions_def.get_partition_keys())  # from the definitions' settings
        require_loaded_shards(loaded, shards, settings.config_path or str(config_path_from_env()))
    except ValueError as exc:
        raise dg.Failure(str(exc)) from None
    db = store.get()
    pooled = db.query(f'SELECT DISTINCT query_id FROM "{POOLED_PAIRS}"')["query_id"]
    mine = shard_query_ids(pooled, context.partition_key, shards)
    pairs = db.read_table(POOLED_PAIRS, columns=["query_id", "chunk_id"], where={"query_id": mine})
    if s.judging.strategy == "full":
        run = _judge(context, llm, settings, store, "judge", pairs, queries)
        return dg.Output(_with_tier(run.outcomes, queries), metadata=run.metadata())
    if not db.table_exists(JUDGED_SET):
        raise dg.Failure(f"judging.strategy adaptive: materialise {JUDGED_SET} before judged_labels")
    asked = db.read_table(JUDGED_SET, columns=["query_id", "chunk_id"], where={"query_id": mine})
    run = _judge(context, llm, settings, store, "judge", asked, queries)  # labels stored by judged_set: reused
    unjudged = pairs.join(asked, on=["query_id", "chunk_id"], how="anti").with_columns(
        status=pl.lit("unjudged"), reused=pl.lit(False)
    )
    outcomes = pl.concat([run.outcomes, unjudged], how="diagonal_relaxed").sort("query_id", "chunk_id")
    return dg.Output(
        _with_tier(outcomes.select(run.outcomes.columns), queries),
        metadata={**run.metadata(), "strategy": "adaptive", "pairs": outcomes.height, "unjudged": unjudged.height},
    )


def _gather(context: dg.AssetExecutionContext, store: StoreResource, table: str, columns: str, status: str) -> int:
    """Replace ``table`` with the ``status`` rows of every loaded shard of ``judged_labels`` (``columns`` of them),
    in (query_id, chunk_id) order; DuckDB copies them in one transaction, none is loaded here. The rows written."""
    shards = sorted(context.asset_partition_keys_for_input(JUDGED_LABELS))  # those the IO manager would load
    if not store.get().table_exists(JUDGED_LABELS):
        raise KeyError(f"table {JUDGED_LABELS!r} is not in {store.get().path}; materialise its asset first")
    return store.get().replace_from_query(
        table,
        f"SELECT {columns} FROM {JUDGED_LABELS} WHERE status = ? AND {PARTITION_COLUMN} IN (SELECT unnest(?)) "
        "ORDER BY query_id, chunk_id",
        [status, shards],
    )


@dg.asset(
    group_name=GROUP, deps=[JUDGED_LABELS], description="The labels of every shard: one row per labelled pooled pair."
)
def judgments(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    rows = _gather(context, store, "judgments", f"* EXCLUDE (status, failure_reason, {PARTITION_COLUMN})", "labelled")
    counts = "count(*) FILTER (WHERE reused), count(*) FILTER (WHERE structural_violation)"
    reused, violations = store.get().query(f"SELECT {counts} FROM judgments").row(0)
    return dg.MaterializeResult(
        metadata={
            "table": "judgments",
            "rows": rows,
            "labels": rows,
            "reused_labels": reused,
            "structural_violations": violations,
        }
    )


@dg.asset(
    group_name=GROUP, deps=[JUDGED_LABELS], description="Pooled pairs the judge could not label, with the reason."
)
def judging_failures(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
    rows = _gather(context, store, "judging_failures", "query_id, chunk_id, tier, failure_reason", "failed")
    counts = store.get().query(
        "SELECT split_part(failure_reason, ':', 1) AS kind, count(*) AS len FROM judging_failures "
        "GROUP BY kind ORDER BY kind"
    )
    return dg.MaterializeResult(
        metadata={"table": "judging_failures", "rows": rows, "failures": rows, "by_kind": md_table(counts)}
    )


@dg.asset(
    group_name=GROUP,
    description="Stored labels of the current judge (identity) and prompt whose chunk left the corpus: "
    "reported here, excluded from judgments.",
    ins={
        "judgments": dg.AssetIn("judgments", metadata={"columns": ["judge_model", "prompt_hash", "judge_identity"]}),
        "chunks": dg.AssetIn(CHUNKS.key, metadata={"columns": ["chunk_id"]}),
    },
)
def orphaned_judgments(store: StoreResource, judgments: pl.DataFrame, chunks: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    versions = judgments.select("judge_model", "prompt_hash", "judge_identity").unique().sort(pl.all())
    frames = [
        orphaned_labels(store.get(), m, h, chunks.get_column("chunk_id"), judge_identity=i)
        for m, h, i in versions.iter_rows()
    ]
    orphans = (
        pl.concat(frames)
        if frames
        else pl.DataFrame(
            schema={"query_id": pl.String, "chunk_id": pl.String, "corpus_version": pl.String, "score": pl.Int8}
        )
    )
    return dg.Output(
        orphans,
        metadata={
            "orphaned_labels": orphans.height,
            "chunks_gone": orphans.get_column("chunk_id").n_unique(),
            "by_corpus_version": md_table(orphans.group_by("corpus_version").len().sort("corpus_version")),
        },
    )


@dg.asset(
    group_name=GROUP,
    description="The labelled pairs' estimated recall of the pool's relevant pairs, at the lenient and strict cuts, "
    "per tier and overall, with its interval (the remainder sample; exactly 1 when every pooled pair is labelled).",
    ins={
        "queries": QUERIES,
        "pooled_pairs": dg.AssetIn(POOLED_PAIRS, metadata={"columns": ["query_id", "chunk_id"]}),
        "judged_set": dg.AssetIn(JUDGED_SET, metadata={"columns": ["query_id", "chunk_id", "role"]}),
        "judgments": dg.AssetIn("judgments", metadata={"columns": ["query_id", "chunk_id", "score"]}),
        "judging_failures": dg.AssetIn("judging_failures", metadata={"columns": ["query_id", "chunk_id"]}),
    },
)
def unjudged_estimate(
    settings: SettingsResource,
    pooled_pairs: pl.DataFrame,
    judged_set: pl.DataFrame,
    judgments: pl.DataFrame,
    judging_failures: pl.DataFrame,
    queries: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    j = settings.get().judging
    keys = ["query_id", "chunk_id"]
    role = (
        pl.lit("round") if j.strategy == "full" else pl.col("role")  # null: not asked
    )
    pool = (
        pooled_pairs.select(keys)
        .unique()
        .join(judged_set.select(*keys, "role"), on=keys, how="left")
        .with_columns(role=role)
        .join(judgments.select(*keys, "score", status=pl.lit("labelled")), on=keys, how="left")
        .join(judging_failures.select(*keys, failed=pl.lit("failed")), on=keys, how="left")
        .with_columns(status=pl.coalesce("status", "failed"))
        .join(queries.select("query_id", "tier"), on="query_id", how="left")
    )
    table = unjudged_estimates(pool, {"lenient": j.lenient_cut, "strict": j.strict_cut})
    overall = table.filter(pl.col("scope") == "all")
    meta: dict = {"strategy": j.strategy, "estimate": md_table(table)}
    for r in overall.to_dicts():
        meta[f"recall_{r['cut']}"] = r["note"] or f"{r['recall']:.4f} [{r['recall_low']:.4f}, {r['recall_high']:.4f}]"
    return dg.Output(table, metadata=meta)


@dg.asset(group_name=GROUP, description="Seeded pilot sample of labelled pairs, stratified by tier and score band.")
def judge_pilot_sample(settings: SettingsResource, judgments: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    j = settings.get().judging
    sample = pilot_sample(judgments, j.pilot_size, j.pilot_seed, j.lenient_cut, j.strict_cut)
    strata = sample.group_by("tier", "band").len().sort("tier", "band")
    return dg.Output(sample, metadata={"pairs": sample.height, "strata": md_table(strata)})


@dg.asset(
    group_name=GROUP,
    description="Each reference judge's labels on the pilot sample (or failures): llm.reference_judge and, when "
    "set, llm.cross_model_judge (column reference_stage).",
    deps=[CHUNKS.key],
    ins={"queries": QUERIES},
)
def reference_judgments(
    context: dg.AssetExecutionContext,
    llm: LLMResource,
    settings: SettingsResource,
    store: StoreResource,
    judge_pilot_sample: pl.DataFrame,
    queries: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    frames, meta, calls = [], {}, 0
    for stage in reference_judge_stages(settings.get().llm):
        run = _judge(context, llm, settings, store, stage, judge_pilot_sample, queries)
        frames.append(
            _with_tier(run.outcomes, queries).with_columns(
                reference_stage=pl.lit(stage), reference_model=pl.lit(run.judge_model)
            )
        )
        meta.update({f"{stage}/{k}": v for k, v in run.metadata().items()})
        calls += run.calls
    meta["http_calls"] = calls  # every reference stage's, each counted once
    return dg.Output(pl.concat(frames), metadata=meta)


@dg.multi_asset(
    group_name=GROUP,
    deps=["judgments"],
    outs={
        "judge_reliability": dg.AssetOut(
            description="Agreement of the judge with each reference judge on the pilot, named by what it measures "
            "(audit: self_consistency for the judge's model again, cross_model for another model); refused "
            "(values null, note says why) when a reference judge is the judge itself."
        ),
        "judge_confusion": dg.AssetOut(
            description="Score confusion table per reference judge: judge (rows) vs reference (columns)."
        ),
    },
)
def judge_reliability(settings: SettingsResource, store: StoreResource, reference_judgments: pl.DataFrame):
    j = settings.get().judging
    db = store.get()
    pilot = reference_judgments.select("query_id", "chunk_id").unique()
    main = db.read_table(
        "judgments", columns=AGREEMENT_COLUMNS, where={"query_id": pilot["query_id"].unique().to_list()}
    ).join(pilot, on=["query_id", "chunk_id"], how="semi")  # the pilot pairs' labels
    judges = stored_judges(db)
    metrics, confusion = reference_audits(main, reference_judgments, j.lenient_cut, j.strict_cut, judges)
    meta: dict = {"judge_identities": ", ".join(sorted(set(judges.get_column("judge_identity").drop_nulls())))}
    refused = []
    for stage, kind, model, note in (
        metrics.select("reference_stage", "audit", "reference_model", "note").unique(maintain_order=True).iter_rows()
    ):
        rows = reference_judgments.filter(pl.col("reference_stage") == stage)
        labelled = rows.filter(pl.col("status") == "labelled")
        meta.update(
            {
                f"{stage}/audit": audit_title(kind),
                f"{stage}/reference_model": model,
                f"{stage}/pilot_pairs_compared": int(metrics.filter(pl.col("reference_stage") == stage)["pairs"][0]),
                f"{stage}/reference_failures": rows.height - labelled.height,
                f"{stage}/reference_identities": ", ".join(sorted(set(labelled["judge_identity"].drop_nulls()))),
                f"{stage}/reference_is_the_judge": note is not None,
            }
        )
        if note:
            meta[f"{stage}/refused"] = note
            refused.append(note)
    meta["metrics"] = md_table(metrics)
    yield dg.Output(metrics, output_name="judge_reliability", metadata=meta)
    yield dg.Output(
        confusion,
        output_name="judge_confusion",
        metadata={"confusion": md_table(confusion), **({"refused": "; ".join(refused)} if refused else {})},
    )


@dg.asset(
    group_name=GROUP,
    description="Audit pool pairs labelled by the judge; only pairs without a stored label are asked.",
    deps=[CHUNKS.key],
    ins={"queries": QUERIES},
)
def audit_judgments(
    context: dg.AssetExecutionContext,
    llm: LLMResource,
    settings: SettingsResource,
    store: StoreResource,
    audit_pool: pl.DataFrame,
    queries: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    run = _judge(context, llm, settings, store, "judge", audit_pool, queries)
    return dg.Output(_with_tier(run.outcomes, queries), metadata=run.metadata())


@dg.asset(
    group_name=GROUP,
    description="Lenient and strict recall of the main pool against all relevant chunks known from both rounds.",
    ins={
        "queries": QUERIES,
        "pooled_pairs": dg.AssetIn("pooled_pairs", metadata={"columns": ["query_id", "chunk_id"]}),
        "judgments": dg.AssetIn("judgments", metadata={"columns": ["query_id", "chunk_id", "score"]}),
    },
)
def pool_completeness(
    settings: SettingsResource,
    pooled_pairs: pl.DataFrame,
    audit_pool: pl.DataFrame,
    judgments: pl.DataFrame,
    audit_judgments: pl.DataFrame,
    queries: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    j = settings.get().judging
    labels = pl.concat(
        [
            judgments.select("query_id", "chunk_id", "score"),
            audit_judgments.filter(pl.col("status") == "labelled").select("query_id", "chunk_id", "score"),
        ]
    ).unique(["query_id", "chunk_id"])
    table = pool_recall(pooled_pairs, audit_pool, labels, queries, {"lenient": j.lenient_cut, "strict": j.strict_cut})
    overall = {f"recall_{r['cut']}_micro": r["recall_micro"] for r in table.filter(pl.col("scope") == "all").to_dicts()}
    meta = {
        "audit_pairs_unlabelled": int((audit_judgments.get_column("status") == "failed").sum()),
        **{k: (round(v, 4) if v is not None else "n/a") for k, v in overall.items()},
        "recall": md_table(table),
    }
    return dg.Output(table, metadata=meta)
