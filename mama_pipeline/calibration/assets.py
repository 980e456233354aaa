"""Dagster assets of the judge-calibration side-file and harness (group ``calibration``).

The scope verdicts come from mamabench's HealthBench oss_eval classification,
asset ``healthbench_scope_verdicts`` (columns ``prompt_id``, ``category``).
"""

from pathlib import Path

import dagster as dg
import polars as pl

from mama_pipeline.calibration._meta_eval import locate, read_meta_eval
from mama_pipeline.calibration._rater_agreement import ALL, JUDGE, PHYSICIANS_POOLED, harness_report
from mama_pipeline.calibration._rubric_judge import (
    RUBRIC_JUDGE_PROMPT,
    STAGE,
    RubricVerdict,
    judge_labels,
    judge_requests,
    judged_rows,
    sample_rows,
)
from mama_pipeline.calibration._side_file import SCOPE_CATEGORIES, build_side_file
from mama_pipeline.common.metadata import FAILURES_SHOWN, md_table
from mama_pipeline.common.observed_inputs import observed_input, settings_files_fingerprint
from mama_pipeline.resources import LLMResource, SettingsResource

GROUP = "calibration"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "calibration_meta_eval": "calibration.meta_eval",
    "calibration_side_file": "",
    "calibration_side_file_accounting": "",
    "calibration_judge_labels": "calibration.harness_sample_size calibration.harness_seed llm.embedded_server llm.rubric_judge",
    "calibration_harness_report": "",
}
SCOPE_VERDICTS = dg.AssetKey("healthbench_scope_verdicts")
INPUT_FILES = "calibration_input_files"

calibration_input_files = observed_input(
    INPUT_FILES,
    GROUP,
    "The files the calibration settings name (the physician meta-evaluation file): sha256 of each.",
    lambda s: settings_files_fingerprint(s.calibration, s.resolve),
)


@dg.asset(
    group_name=GROUP, deps=[INPUT_FILES], description="HealthBench's physician meta-evaluation rows, as upstream."
)
def calibration_meta_eval(settings: SettingsResource) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    found = locate(s.calibration.meta_eval, Path(s.config_dir))
    df = read_meta_eval(found.path)
    physicians = df["anonymized_physician_ids"].explode().n_unique()
    return dg.Output(
        df,
        metadata={
            "origin": found.origin,
            "sha256": found.sha256,
            "licence": s.calibration.meta_eval.licence,
            "meta_eval_rows": df.height,
            "prompts": df["prompt_id"].n_unique(),
            "completions": df["completion_id"].n_unique(),
            "physicians": physicians,
        },
    )


@dg.multi_asset(
    group_name=GROUP,
    ins={"meta_eval": dg.AssetIn("calibration_meta_eval"), "verdicts": dg.AssetIn(SCOPE_VERDICTS)},
    outs={
        "calibration_side_file": dg.AssetOut(
            description="Meta-evaluation rows whose prompt is in scope, every field kept, scope_category added."
        ),
        "calibration_side_file_accounting": dg.AssetOut(
            description="Rows per outcome (kept per scope category, out_of_scope, unclassified, no_verdict)."
        ),
    },
)
def calibration_side_file(meta_eval: pl.DataFrame, verdicts: pl.DataFrame):
    side = build_side_file(meta_eval, verdicts)
    counts = {
        (o if c is None else f"{o}/{c}"): n
        for o, c, n in side.accounting.select("outcome", "scope_category", "rows").iter_rows()
    }
    prompts = {
        f"prompts/{c}": n
        for o, c, n in side.accounting.select("outcome", "scope_category", "prompts").iter_rows()
        if o == "kept"
    }
    yield dg.Output(
        side.rows,
        output_name="calibration_side_file",
        metadata={"side_file_rows": side.rows.height, "prompts": side.rows["prompt_id"].n_unique(), **prompts},
    )
    yield dg.Output(
        side.accounting,
        output_name="calibration_side_file_accounting",
        metadata={"meta_eval_rows": meta_eval.height, **counts, "table": md_table(side.accounting)},
    )


@dg.asset(
    group_name=GROUP,
    ins={"side_file": dg.AssetIn("calibration_side_file")},
    description="The candidate rubric judge's verdict on a seeded sample of side-file rows; failures listed.",
)
def calibration_judge_labels(
    context: dg.AssetExecutionContext, side_file: pl.DataFrame, settings: SettingsResource, llm: LLMResource
) -> dg.Output[pl.DataFrame]:
    cfg = settings.get().calibration
    rows = sample_rows(side_file, cfg.harness_sample_size, cfg.harness_seed)
    with llm.client(STAGE, context) as client:
        report = client.run(RUBRIC_JUDGE_PROMPT, RubricVerdict, judge_requests(rows))
    labels = judge_labels(rows, report)
    failures = labels.filter(pl.col("status") != "ok")
    return dg.Output(
        labels,
        metadata={
            **report.metadata(),
            "sampled_rows": rows.height,
            "side_file_rows": side_file.height,
            "sample_seed": cfg.harness_seed,
            "failed_calls": failures.height,
            "failures": md_table(failures.select("upstream_line", "status", "error").head(FAILURES_SHOWN)),
        },
    )


@dg.asset(
    group_name=GROUP,
    ins={"side_file": dg.AssetIn("calibration_side_file"), "labels": dg.AssetIn("calibration_judge_labels")},
    description="Judge vs physicians (met-rate, agreement, macro-F1, balanced accuracy), physicians as baseline.",
)
def calibration_harness_report(side_file: pl.DataFrame, labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    judged = judged_rows(side_file, labels)
    report = harness_report(judged, SCOPE_CATEGORIES)
    summary = report.filter(pl.col("rater").is_in([JUDGE, PHYSICIANS_POOLED])).select(
        "rater",
        "scope_category",
        "rows",
        "met_rate",
        "reference_met_rate",
        "agree_on_met",
        "agree_on_not_met",
        "consensus_agreement",
        "macro_f1",
        "balanced_accuracy",
    )
    headline = {
        f"{rater}/{k}": v
        for rater in (JUDGE, PHYSICIANS_POOLED)
        for row in report.filter((pl.col("rater") == rater) & (pl.col("scope_category") == ALL)).iter_rows(named=True)
        for k, v in row.items()
        if k in ("met_rate", "reference_met_rate", "macro_f1", "balanced_accuracy") and v is not None
    }
    return dg.Output(
        report,
        metadata={
            "judged_rows": judged.height,
            "failed_calls_excluded": labels.filter(pl.col("status") != "ok").height,
            **headline,
            "summary": md_table(summary),
        },
    )
