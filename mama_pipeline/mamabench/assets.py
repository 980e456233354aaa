"""Dagster assets of mamabench (group ``mamabench``), thin over the pure modules.

raw pool (x9) -> adapted rows + provenance -> scope verdicts (LLM) -> items,
accounting, criteria -> yield, agreement (second LLM), Kenya parity; the release folder is built by
``mama_pipeline.release.assets.mamabench_release`` (group ``mamabench``).
``healthbench_scope_verdicts`` (oss_eval verdict per prompt_id) feeds the calibration
area's side-file, and the release folder takes that side-file back in.
"""

import json

import dagster as dg
import polars as pl

from mama_pipeline.common.markdown import VERBATIM
from mama_pipeline.common.metadata import FAILURES_SHOWN
from mama_pipeline.common.metadata import md_table as metadata_table
from mama_pipeline.common.observed_inputs import observed_input
from mama_pipeline.corpus import source_fingerprints
from mama_pipeline.llm.reference_audit import audit_title
from mama_pipeline.mamabench._adapters import adapt_pool
from mama_pipeline.mamabench._pools import POOLS, Pool
from mama_pipeline.mamabench._scope_agreement import (
    agreement_rows,
    agreement_stats,
    classifier_agreement,
    classifier_audit,
    prior_pairs,
    verdict_pairs,
)
from mama_pipeline.mamabench._scope_prompt import verdict_model
from mama_pipeline.mamabench._scoping import classify, criteria_table, finalise, joined_verdicts
from mama_pipeline.mamabench._sources import load_pool, provenance_table
from mama_pipeline.mamabench._yields import refusals_by_reason, yield_table
from mama_pipeline.resources import LLMResource, SettingsResource

GROUP = "mamabench"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "mamabench_raw_medmcqa": "mamabench.sources",
    "mamabench_raw_medqa_usmle": "mamabench.sources",
    "mamabench_raw_afrimedqa_mcq": "mamabench.sources",
    "mamabench_raw_kenya_vignettes": "mamabench.sources",
    "mamabench_raw_afrimedqa_saq": "mamabench.sources",
    "mamabench_raw_whb": "mamabench.sources",
    "mamabench_raw_healthbench_oss_eval": "mamabench.sources",
    "mamabench_raw_healthbench_consensus": "mamabench.sources",
    "mamabench_raw_healthbench_hard": "mamabench.sources",
    "mamabench_adapted": "mamabench.afrimedqa_specialty_contains mamabench.afrimedqa_tier mamabench.medmcqa_subjects mamabench.sources mamabench.terse_stem_words",
    "mamabench_provenance": "mamabench.afrimedqa_specialty_contains mamabench.afrimedqa_tier mamabench.medmcqa_subjects mamabench.sources mamabench.terse_stem_words",
    "mamabench_scope_verdicts": "llm.classifier llm.embedded_server",
    "healthbench_scope_verdicts": "",
    "mamabench_items": "",
    "mamabench_criteria": "",
    "mamabench_accounting": "",
    "mamabench_yield": "",
    "mamabench_kenya_parity": "",
    "mamabench_agreement": "llm.classifier_reference llm.embedded_server mamabench.agreement_pools mamabench.agreement_sample_size mamabench.agreement_seed",
}
PARITY_POOL = "kenya_vignettes"


def raw_key(pool: Pool) -> str:
    return f"mamabench_raw_{pool.name}"


def md_table(df: pl.DataFrame) -> dg.MetadataValue:
    """Every row, values as they are."""
    return metadata_table(df, limit=None, cells=VERBATIM, empty=None)


def source_key(pool: Pool) -> str:
    return f"mamabench_source_{pool.name}"


def _source(pool: Pool) -> dg.SourceAsset:
    return observed_input(
        source_key(pool),
        GROUP,
        f"The configured files of {pool.dataset} ({pool.name}): sha256 of each local file, or the commit of the "
        "hub revision.",
        lambda s: json.dumps(source_fingerprints(getattr(s.mamabench.sources, pool.name), s.resolve), sort_keys=True),
    )


def _raw_asset(pool: Pool) -> dg.AssetsDefinition:
    @dg.asset(
        name=raw_key(pool),
        group_name=GROUP,
        deps=[source_key(pool)],
        description=f"Upstream rows of {pool.dataset} ({pool.name}), every native field kept as a JSON record.",
    )
    def _raw(settings: SettingsResource) -> dg.Output[pl.DataFrame]:
        s = settings.get()
        loaded = load_pool(pool, getattr(s.mamabench.sources, pool.name), s.resolve)
        return dg.Output(loaded.rows, metadata=loaded.metadata())

    return _raw


SOURCES = [_source(p) for p in POOLS]
RAW_ASSETS = [_raw_asset(p) for p in POOLS]


@dg.multi_asset(
    group_name=GROUP,
    ins={p.name: dg.AssetIn(raw_key(p)) for p in POOLS},
    outs={
        "mamabench_adapted": dg.AssetOut(
            description="One row per upstream row: canonical item or refusal reason, pre-scope, scope input."
        ),
        "mamabench_provenance": dg.AssetOut(description="Per pool and file: sha256, hub revision, rows, licence."),
    },
)
def mamabench_adapted(settings: SettingsResource, **raws: pl.DataFrame):
    s = settings.get().mamabench
    adapted = pl.concat([adapt_pool(p.name, raws[p.name], s) for p in POOLS])
    counts = adapted.group_by("pool", "status").len().sort("pool", "status")
    yield dg.Output(adapted, output_name="mamabench_adapted", metadata={"by_status": md_table(counts)})
    provenance = pl.concat([provenance_table(p, raws[p.name], getattr(s.sources, p.name)) for p in POOLS])
    yield dg.Output(provenance, output_name="mamabench_provenance")


@dg.asset(group_name=GROUP, description="Scope verdict per pending item: classifier, or oss_eval's by prompt_id.")
def mamabench_scope_verdicts(
    context: dg.AssetExecutionContext, mamabench_adapted: pl.DataFrame, llm: LLMResource, settings: SettingsResource
) -> pl.DataFrame:
    stage = settings.get().llm.classifier
    with llm.client("classifier", context) as client:
        verdicts, report = classify(client, mamabench_adapted, verdict_model(stage.reasoning))
    joined = joined_verdicts(mamabench_adapted, verdicts)
    out = pl.concat([verdicts, joined]).sort("item_id")
    by_status = out.group_by("via", "status").len().sort("via", "status")
    failures = out.filter(pl.col("status") != "ok").select("item_id", "status", "error").head(FAILURES_SHOWN)
    context.add_output_metadata(
        {
            **report.metadata(),
            "by_status": md_table(by_status),
            "failures_first_20": md_table(failures),
        }
    )
    return out


@dg.asset(
    group_name=GROUP,
    description="HealthBench oss_eval verdict per prompt_id (null category: unclassified), for the calibration side-file.",
)
def healthbench_scope_verdicts(mamabench_adapted: pl.DataFrame, mamabench_scope_verdicts: pl.DataFrame) -> pl.DataFrame:
    oss = mamabench_adapted.filter(pl.col("pool") == "healthbench_oss_eval", pl.col("status") == "pending")
    return (
        oss.select("item_id", pl.col("join_key").alias("prompt_id"))
        .join(mamabench_scope_verdicts.select("item_id", "status", "category"), on="item_id", how="inner")
        .with_columns(pl.when(pl.col("status") == "ok").then(pl.col("category")).alias("category"))
        .select("prompt_id", "category", "status", "item_id")
        .sort("prompt_id")
    )


@dg.multi_asset(
    group_name=GROUP,
    outs={
        "mamabench_items": dg.AssetOut(description="Kept canonical items with their scope category."),
        "mamabench_accounting": dg.AssetOut(
            description="Every upstream row: kept, refused (reason), out_of_scope or unclassified."
        ),
        "mamabench_criteria": dg.AssetOut(description="Rubric criterion text of kept items, keyed by criterion_id."),
    },
)
def mamabench_items(mamabench_adapted: pl.DataFrame, mamabench_scope_verdicts: pl.DataFrame):
    items, accounting = finalise(mamabench_adapted, mamabench_scope_verdicts)
    criteria = criteria_table(mamabench_adapted, items)
    yield dg.Output(
        items,
        output_name="mamabench_items",
        metadata={
            "by_set_type_and_category": md_table(
                items.group_by("set_type", "category").len().sort("set_type", "category")
            ),
        },
    )
    yield dg.Output(
        accounting,
        output_name="mamabench_accounting",
        metadata={
            "refusals": md_table(refusals_by_reason(accounting)),
        },
    )
    yield dg.Output(criteria, output_name="mamabench_criteria")


@dg.asset(
    group_name=GROUP, description="Per source: upstream rows, kept, refused, out of scope, unclassified, yield %."
)
def mamabench_yield(mamabench_accounting: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    table = yield_table(mamabench_accounting)
    meta = {"table": md_table(table), "kept_total": int(table["kept"].sum())}
    meta.update({f"yield_pct/{r['pool']}": r["yield_pct"] for r in table.iter_rows(named=True)})
    return dg.Output(table, metadata=meta)


@dg.asset(
    group_name=GROUP,
    description="Second-classifier (stage classifier_reference) labels on a seeded sample, paired with ours; "
    "no agreement figure (note says why) when the reference classifier is the classifier itself.",
)
def mamabench_agreement(
    context: dg.AssetExecutionContext,
    mamabench_adapted: pl.DataFrame,
    mamabench_scope_verdicts: pl.DataFrame,
    llm: LLMResource,
    settings: SettingsResource,
) -> pl.DataFrame:
    s = settings.get()
    ours, rows = agreement_rows(mamabench_adapted, mamabench_scope_verdicts, s.mamabench)
    with llm.client("classifier_reference", context) as client:
        reference, report = classify(client, rows, verdict_model(s.llm.classifier_reference.reasoning))
    pairs = verdict_pairs(ours, reference).with_columns(
        pl.lit(ours["model"][0] if ours.height else None, pl.String).alias("model_a"),
        pl.lit(report.model).alias("model_b"),
        pl.lit(ours["identity"][0] if ours.height else None, pl.String).alias("identity_a"),
        pl.lit(client.identity).alias("identity_b"),
    )
    stats = classifier_agreement(pairs)
    kind = classifier_audit(pairs)
    pairs = pairs.with_columns(pl.lit(kind, pl.String).alias("audit"), pl.lit(stats.note, pl.String).alias("note"))
    meta = {
        **report.metadata(),
        **stats.metadata("agreement"),
        "reference_is_the_classifier": stats.note is not None,
        "agreement/audit": audit_title(kind) if kind else "none (no items)",
    }
    if stats.note is None:  # the same classifier twice measures nothing: no confusion or per-category figures
        meta["confusion"] = md_table(pl.DataFrame(stats.confusion).filter(pl.col("n") > 0))
        meta["per_category"] = md_table(pl.DataFrame(stats.per_category))
    context.add_output_metadata(meta)
    return pairs


@dg.asset(group_name=GROUP, description="Our verdicts against the labels the Kenya vignettes arrived with.")
def mamabench_kenya_parity(
    context: dg.AssetExecutionContext, mamabench_adapted: pl.DataFrame, mamabench_scope_verdicts: pl.DataFrame
) -> pl.DataFrame:
    pairs = prior_pairs(mamabench_adapted, mamabench_scope_verdicts, PARITY_POOL)
    stats = agreement_stats(pairs)
    context.add_output_metadata(
        {
            **stats.metadata("parity"),
            "confusion": md_table(pl.DataFrame(stats.confusion).filter(pl.col("n") > 0)),
        }
    )
    return pairs
