"""Asset checks of mamabench: the accounting invariant, the validity of released items, the classifier failure bound."""

import json

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import FAILURES_SHOWN
from mama_pipeline.llm.failure_bounds import classifier_failures
from mama_pipeline.mamabench._pools import POOLS
from mama_pipeline.mamabench._schema import CanonicalItem
from mama_pipeline.mamabench._scope_agreement import same_classifier_reason
from mama_pipeline.mamabench._yields import STATUSES
from mama_pipeline.mamabench.assets import RAW_ASSETS, raw_key
from mama_pipeline.resources import SettingsResource, StoreResource


def accounting_problems(raw_rows: dict[str, int], accounting: pl.DataFrame, items: pl.DataFrame) -> list[str]:
    """Breaches of upstream == kept + refused + out_of_scope + unclassified, per pool."""
    problems = []
    bad_status = sorted(set(accounting["status"].unique().to_list()) - set(STATUSES))
    if bad_status:
        problems.append(f"statuses outside {STATUSES}: {bad_status}")
    dupes = accounting.group_by("pool", "origin", "upstream_index").len().filter(pl.col("len") > 1)
    if dupes.height:
        problems.append(f"{dupes.height} upstream rows accounted more than once")
    counts = dict(accounting.group_by("pool").len().iter_rows())
    kept = dict(accounting.filter(pl.col("status") == "kept").group_by("pool").len().iter_rows())
    released = dict(items.group_by("pool").len().iter_rows())
    for pool, upstream in sorted(raw_rows.items()):
        if counts.get(pool, 0) != upstream:
            problems.append(f"{pool}: {upstream} upstream rows but {counts.get(pool, 0)} accounted")
        if kept.get(pool, 0) != released.get(pool, 0):
            problems.append(f"{pool}: {kept.get(pool, 0)} kept in the accounting but {released.get(pool, 0)} items")
    refused_blank = accounting.filter(pl.col("status").is_in(["refused", "unclassified"]), pl.col("reason").is_null())
    if refused_blank.height:
        problems.append(f"{refused_blank.height} refused/unclassified rows without a reason")
    return problems


def item_problems(items: pl.DataFrame, criteria: pl.DataFrame) -> list[str]:
    """Items that fail the canonical schema, repeated ids, or rubric ids missing from the side table."""
    problems = []
    if items["item_id"].n_unique() != items.height:
        problems.append("repeated item ids")
    known = set(criteria["criterion_id"].to_list())
    for item_id, text in items.select("item_id", "item_json").iter_rows():
        try:
            item = CanonicalItem.model_validate_json(text)
        except ValueError as exc:
            problems.append(f"{item_id}: {str(exc).splitlines()[0]}")
            continue
        missing = [r.criterion_id for r in item.rubrics or [] if r.criterion_id not in known]
        if missing:
            problems.append(f"{item_id}: criteria {missing[:3]} not in the side table")
        if len(problems) >= 20:
            break
    return problems


@dg.asset_check(
    asset=dg.AssetKey("mamabench_accounting"),
    additional_deps=[a.key for a in RAW_ASSETS] + [dg.AssetKey("mamabench_items")],
    description="Per pool: upstream rows == kept + refused + out_of_scope + unclassified; kept == released items.",
    blocking=True,
)
def mamabench_accounting_invariant(store: StoreResource) -> dg.AssetCheckResult:
    db = store.get()
    counts = " UNION ALL ".join(f"SELECT '{p.name}' AS pool, count(*) AS n FROM \"{raw_key(p)}\"" for p in POOLS)
    raw_rows = dict(db.query(counts).iter_rows())
    accounting = db.read_table("mamabench_accounting")
    items = db.query("SELECT item_id, pool FROM mamabench_items")
    problems = accounting_problems(raw_rows, accounting, items)
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"problems": json.dumps(problems[:FAILURES_SHOWN]), "pools": len(raw_rows), "rows": accounting.height},
    )


@dg.asset_check(
    asset=dg.AssetKey("mamabench_items"),
    additional_ins={"criteria": dg.AssetIn("mamabench_criteria")},
    description="Every kept item validates against the canonical schema; ids unique; rubric criteria resolvable.",
    blocking=True,
)
def mamabench_items_valid(mamabench_items: pl.DataFrame, criteria: pl.DataFrame) -> dg.AssetCheckResult:
    problems = item_problems(mamabench_items, criteria)
    return dg.AssetCheckResult(passed=not problems, metadata={"problems": json.dumps(problems[:FAILURES_SHOWN])})


@dg.asset_check(
    asset=dg.AssetKey("mamabench_scope_verdicts"),
    blocking=True,
    description="The share of items the scope classifier could not classify stays under "
    "llm.classifier.max_failure_rate; blocks everything built on the verdicts (the release refuses too).",
)
def classifier_failure_rate_under_bound(
    settings: SettingsResource, mamabench_scope_verdicts: pl.DataFrame
) -> dg.AssetCheckResult:
    stage = classifier_failures(mamabench_scope_verdicts, settings.get().llm.classifier.max_failure_rate)
    return dg.AssetCheckResult(passed=not stage.over, metadata={**stage.metadata(), "summary": stage.describe()})


@dg.asset_check(
    asset=dg.AssetKey("mamabench_agreement"),
    blocking=True,
    description="The reference classifier is another classifier (another endpoint, model or decoding): agreement "
    "of a classifier with its own cached answers is not an agreement figure.",
)
def reference_is_another_classifier(mamabench_agreement: pl.DataFrame) -> dg.AssetCheckResult:
    reason = same_classifier_reason(mamabench_agreement)
    return dg.AssetCheckResult(
        passed=reason is None,
        metadata={"reason": reason or "the reference is another classifier"},
    )


CHECKS = [
    mamabench_accounting_invariant,
    mamabench_items_valid,
    classifier_failure_rate_under_bound,
    reference_is_another_classifier,
]
