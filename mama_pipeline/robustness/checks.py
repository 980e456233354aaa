"""Asset checks of the robustness group."""

import re

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.common.shared_inputs import QUERIES
from mama_pipeline.robustness._variants import SEPARATOR, same_text

ID_RE = re.compile(r"^q_\d{5,}" + re.escape(SEPARATOR) + r"[a-z][a-z0-9_]*$")


@dg.asset_check(
    asset=dg.AssetKey("query_variants"),
    additional_ins={"queries": QUERIES},
    description="Variant ids are <parent id>~<kind>, unique, of a released query; no variant repeats its parent's text.",
)
def variants_follow_rules(query_variants: pl.DataFrame, queries: pl.DataFrame) -> dg.AssetCheckResult:
    ids = query_variants.get_column("variant_id").to_list()
    expected = [f"{p}{SEPARATOR}{k}" for p, k in query_variants.select("parent_id", "kind").iter_rows()]
    problems = {
        "bad_ids": sum(ID_RE.match(v) is None for v in ids),
        "ids_not_parent_and_kind": sum(a != b for a, b in zip(ids, expected)),
        "duplicate_ids": len(ids) - len(set(ids)),
        "unknown_parents": query_variants.join(
            queries.select(pl.col("query_id").alias("parent_id")), on="parent_id", how="anti"
        ).height,
        "identical_to_parent": sum(
            same_text(a, b) for a, b in query_variants.select("query_text", "parent_text").iter_rows()
        ),
    }
    return dg.AssetCheckResult(passed=not any(problems.values()), metadata={"variants": len(ids), **problems})


@dg.asset_check(
    asset=dg.AssetKey("variant_decisions"),
    description="Every rewrite and gate request got a valid answer; failures are listed, never kept as variants "
    "unless robustness.keep_when_gate_fails.",
)
def no_rewrite_failures(variant_decisions: pl.DataFrame) -> dg.AssetCheckResult:
    failed = variant_decisions.filter(
        pl.col("status").is_in(["rewrite_failed", "gate_failed"]) | (pl.col("gate") == "failed")
    ).select("variant_id", "status", "error")
    return dg.AssetCheckResult(
        passed=failed.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"decisions": variant_decisions.height, "failed": failed.height, "failures": md_table(failed)},
    )


@dg.asset_check(
    asset=dg.AssetKey("variant_holes"),
    description="Every hole in the clean and variant top-k was judged (or reused); failures and holes over the "
    "budget lower Judged@k and are listed.",
)
def holes_judged(variant_holes: pl.DataFrame) -> dg.AssetCheckResult:
    open_holes = variant_holes.filter(pl.col("status").is_in(["failed", "over_budget"]))
    return dg.AssetCheckResult(
        passed=open_holes.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "holes": variant_holes.height,
            "unlabelled": open_holes.height,
            "by_status": md_table(variant_holes.group_by("status").len().sort("status")),
        },
    )


@dg.asset_check(
    asset=dg.AssetKey("robustness_scoreboard"),
    description="In every comparison the clean and the variant top-k were judged alike: their mean Judged@k "
    "differ by at most robustness.coverage_tolerance; the comparisons that differ more are listed.",
)
def coverage_alike(robustness_scoreboard: pl.DataFrame) -> dg.AssetCheckResult:
    comparisons = robustness_scoreboard.unique(["tier", "kind", "retriever"], keep="first", maintain_order=True)
    differing = comparisons.filter(pl.col("coverage_differs")).select(
        "tier", "kind", "retriever", "clean_judged", "variant_judged", "clean_ranked", "variant_ranked"
    )
    return dg.AssetCheckResult(
        passed=differing.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "comparisons": comparisons.height,
            "coverage_differs": differing.height,
            "differing": md_table(differing, 50),
        },
    )


CHECKS = [variants_follow_rules, no_rewrite_failures, holes_judged, coverage_alike]
