"""Asset checks of the clinician group."""

import json

import dagster as dg
import polars as pl

from mama_pipeline.clinician._estimates import ESTIMATED
from mama_pipeline.clinician._tasks import TASK_DATA_KEYS
from mama_pipeline.clinician.assets import clinician_estimates, clinician_labels, clinician_tasks
from mama_pipeline.common.metadata import md_table
from mama_pipeline.resources import SettingsResource


@dg.asset_check(
    asset=clinician_tasks,
    blocking=True,
    description="Task data holds the ids, the query and chunk (or item) only: no LLM label reaches annotators.",
)
def no_llm_label_in_task_data(clinician_tasks: pl.DataFrame) -> dg.AssetCheckResult:
    leaks = [
        (key, sorted(set(json.loads(data)) - set(TASK_DATA_KEYS[kind])))
        for key, kind, data in clinician_tasks.select("task_key", "kind", "data_json").iter_rows()
        if set(json.loads(data)) != set(TASK_DATA_KEYS[kind])
    ]
    return dg.AssetCheckResult(
        passed=not leaks,
        metadata={
            "tasks": clinician_tasks.height,
            "tasks_with_other_fields": len(leaks),
            "examples": md_table(
                pl.DataFrame(
                    {"task_key": [k for k, _ in leaks[:10]], "extra_fields": [", ".join(f) for _, f in leaks[:10]]},
                    schema={"task_key": pl.String, "extra_fields": pl.String},
                )
            ),
        },
    )


@dg.asset_check(asset=clinician_labels, description="One row per task and annotator.")
def one_label_per_task_and_annotator(clinician_labels: pl.DataFrame) -> dg.AssetCheckResult:
    twice = clinician_labels.group_by("task_key", "annotator_id").len().filter(pl.col("len") > 1)
    return dg.AssetCheckResult(passed=twice.is_empty(), metadata={"duplicates": twice.height})


@dg.asset_check(
    asset=clinician_labels,
    additional_ins={"clinician_tasks": dg.AssetIn("clinician_tasks")},
    description="Every label belongs to a task of the current sample (a warning: labels of an older "
    "sample still count where their pair or item was judged).",
)
def labels_belong_to_current_sample(
    clinician_labels: pl.DataFrame, clinician_tasks: pl.DataFrame
) -> dg.AssetCheckResult:
    outside = clinician_labels.join(clinician_tasks.select("task_key"), on="task_key", how="anti")
    return dg.AssetCheckResult(
        passed=outside.is_empty(),
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "labels_outside_sample": outside.height,
            "examples": md_table(outside.select("task_key", "annotator_id").head(10)),
        },
    )


@dg.asset_check(
    asset=clinician_estimates,
    description="Every corrected figure stands on at least clinician.min_estimation_pairs labelled "
    "sampled pairs and lies inside its interval; every refused cell carries a reason and no figure.",
)
def estimates_follow_the_sample_size_rule(
    settings: SettingsResource, clinician_estimates: pl.DataFrame
) -> dg.AssetCheckResult:
    rule = settings.get().clinician.min_estimation_pairs
    est = clinician_estimates.filter(pl.col("status") == ESTIMATED)
    bad = est.filter(
        (pl.col("labelled") < rule) | (pl.col("estimate") < pl.col("ci_low")) | (pl.col("estimate") > pl.col("ci_high"))
    )
    refused = clinician_estimates.filter(pl.col("status") != ESTIMATED)
    bad_refused = refused.filter(pl.col("reason").is_null() | pl.col("estimate").is_not_null())
    return dg.AssetCheckResult(
        passed=bad.is_empty() and bad_refused.is_empty(),
        metadata={
            "estimated": est.height,
            "refused": refused.height,
            "rule": rule,
            "estimates_breaking_the_rule": bad.height,
            "refusals_without_reason_or_with_a_figure": bad_refused.height,
        },
    )


CHECKS = [
    no_llm_label_in_task_data,
    one_label_per_task_and_annotator,
    labels_belong_to_current_sample,
    estimates_follow_the_sample_size_rule,
]
