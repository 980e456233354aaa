"""Asset checks of the judging group. A check reads only the columns of the labels it tests (from the store, or
through ``columns`` input metadata): the labels of the whole pool are never loaded whole."""

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.judging._label_score import RUBRIC_LABEL
from mama_pipeline.judging._reliability import same_judge_reason, stored_judges
from mama_pipeline.judging.assets import judgments
from mama_pipeline.llm.failure_bounds import judge_failures
from mama_pipeline.resources import SettingsResource, StoreResource

KEYS = ["query_id", "chunk_id"]
PAIRS = dg.AssetIn("pooled_pairs", metadata={"columns": KEYS})


def _labels(store: StoreResource, columns: list[str]) -> pl.DataFrame:
    """These columns of the judge's labels (the checked ``judgments`` table), in the table's order."""
    return store.get().read_table("judgments", columns=columns)


def _unjudged(store: StoreResource) -> pl.DataFrame:
    """The pooled pairs adaptive judging left unjudged (none under judging.strategy full)."""
    return store.get().query(f"SELECT {', '.join(KEYS)} FROM judged_labels WHERE status = 'unjudged'")


@dg.asset_check(
    asset=judgments,
    additional_ins={"judging_failures": dg.AssetIn("judging_failures"), "pooled_pairs": PAIRS},
    description="Every pooled pair appears exactly once: labelled, listed as failed with a reason, or (adaptive "
    "judging) unjudged.",
)
def every_pooled_pair_labelled_or_failed(
    store: StoreResource, judging_failures: pl.DataFrame, pooled_pairs: pl.DataFrame
) -> dg.AssetCheckResult:
    judgments = _labels(store, KEYS)
    unjudged = _unjudged(store)
    accounted = pl.concat([judgments, judging_failures.select(KEYS), unjudged])
    pool = pooled_pairs.unique()
    missing = pool.join(accounted, on=KEYS, how="anti")
    extra = accounted.join(pool, on=KEYS, how="anti")
    twice = accounted.filter(accounted.is_duplicated()).unique()
    no_reason = judging_failures.filter(pl.col("failure_reason").is_null() | (pl.col("failure_reason") == ""))
    return dg.AssetCheckResult(
        passed=not (missing.height or extra.height or twice.height or no_reason.height),
        metadata={
            "pooled_pairs": pool.height,
            "labelled": judgments.height,
            "failed": judging_failures.height,
            "unjudged": unjudged.height,
            "missing": missing.height,
            "not_in_pool": extra.height,
            "accounted_twice": twice.height,
            "failed_without_reason": no_reason.height,
            "missing_sample": md_table(missing.head(10)),
        },
    )


@dg.asset_check(
    asset=judgments,
    additional_ins={"pooled_pairs": PAIRS},
    blocking=True,
    description="The share of the pooled pairs asked (all, or those adaptive judging asked) that the judge left "
    "unlabelled stays under llm.judge.max_failure_rate; blocks everything built on the labels (the release refuses "
    "too).",
)
def failure_rate_under_bound(
    settings: SettingsResource, store: StoreResource, pooled_pairs: pl.DataFrame
) -> dg.AssetCheckResult:
    asked = pooled_pairs.join(_unjudged(store), on=KEYS, how="anti")
    stage = judge_failures(asked, _labels(store, KEYS), settings.get().llm.judge.max_failure_rate)
    return dg.AssetCheckResult(
        passed=not stage.over,
        metadata={**stage.metadata(), "summary": stage.describe()},
    )


@dg.asset_check(
    asset=dg.AssetKey("judge_reliability"),
    additional_ins={"reference_judgments": dg.AssetIn("reference_judgments")},
    blocking=True,
    description="Each reference judge is another judge (another seed, temperature or endpoint: self-consistency; "
    "another model: cross-model agreement): agreement of a judge with its own cached labels is not a figure.",
)
def reference_is_another_judge(
    store: StoreResource, judge_reliability: pl.DataFrame, reference_judgments: pl.DataFrame
) -> dg.AssetCheckResult:
    judges = stored_judges(store.get())
    labelled = reference_judgments.filter(pl.col("status") == "labelled")
    reasons = [
        r
        for stage in reference_judgments.get_column("reference_stage").unique().sort()
        if (r := same_judge_reason(judges, labelled.filter(pl.col("reference_stage") == stage)))
    ]
    notes = judge_reliability.get_column("note").drop_nulls().unique().sort().to_list()
    audits = judge_reliability.select("reference_stage", "audit", "reference_model").unique().sort("reference_stage")
    return dg.AssetCheckResult(
        passed=not reasons and not notes,
        metadata={
            "reason": "; ".join(reasons or notes) or "every reference is another judge",
            "audits": md_table(audits),
        },
    )


@dg.asset_check(
    asset=judgments,
    description="D3 >= 1 implies D2 >= 1 holds in every label; answers that broke it are counted (D3 capped to 0).",
)
def structural_rule(store: StoreResource) -> dg.AssetCheckResult:
    judgments = _labels(store, ["d1_topic", "d2_meaningful", "d3_actionable", "d3_answered", "structural_violation"])
    on_topic = judgments.filter(pl.col("d1_topic"))
    broken = on_topic.filter((pl.col("d3_actionable") >= 1) & (pl.col("d2_meaningful") == 0))
    flag_mismatch = on_topic.filter(
        pl.col("structural_violation") != ((pl.col("d3_answered") >= 1) & (pl.col("d2_meaningful") == 0))
    )
    violations = int(judgments.get_column("structural_violation").sum())
    return dg.AssetCheckResult(
        passed=broken.height == 0 and flag_mismatch.height == 0,
        metadata={
            "answers_violating_rule": violations,
            "violation_share": round(violations / judgments.height, 5) if judgments.height else 0.0,
            "labels_breaking_rule": broken.height,
            "flag_mismatches": flag_mismatch.height,
        },
    )


@dg.asset_check(
    asset=judgments,
    description="Score = D1 x (D2 + D3 + D4) in 0..6 for every label; score distribution per tier.",
)
def score_distribution_per_tier(store: StoreResource) -> dg.AssetCheckResult:
    judgments = _labels(store, ["tier", *RUBRIC_LABEL])
    expected = (
        pl.when(pl.col("d1_topic"))
        .then(pl.col("d2_meaningful").cast(pl.Int16) + pl.col("d3_actionable") + pl.col("d4_density"))
        .otherwise(0)
    )
    wrong = judgments.filter((pl.col("score") != expected) | ~pl.col("score").is_between(0, 6))
    gate_filled = judgments.filter(~pl.col("d1_topic") & pl.col("d2_meaningful").is_not_null())
    dist = (
        judgments.with_columns(pl.col("tier").fill_null("(none)"))
        .group_by("tier", "score")
        .len()
        .pivot(on="score", index="tier", values="len", sort_columns=True)
        .fill_null(0)
        .sort("tier")
    )
    return dg.AssetCheckResult(
        passed=wrong.height == 0 and gate_filled.height == 0,
        metadata={
            "inconsistent_scores": wrong.height,
            "gate_false_with_dimensions": gate_filled.height,
            "score_by_tier": md_table(dist),
        },
    )


CHECKS = [
    every_pooled_pair_labelled_or_failed,
    failure_rate_under_bound,
    reference_is_another_judge,
    structural_rule,
    score_distribution_per_tier,
]
