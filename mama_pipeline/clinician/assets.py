"""Dagster assets of the clinician validation loop (group ``clinician``), thin over the pure modules.

Inputs from other areas: ``judgments`` (with tier), ``pooled_pairs``,
``generated_queries``, ``corpus_chunks``, ``mamabench_scope_verdicts``,
``mamabench_adapted`` and the stored ``rankings`` of every configured retriever.
The tables that grow with the pool are read with only the columns a step uses
(``AssetIn`` ``columns`` metadata), the sampled pairs' chunks alone, and the
rankings one retriever at a time.
With ``clinician.label_studio_url`` set the tasks go to that Label Studio server
and the labels come back from it (the sensor re-runs the label assets on new or
changed annotations); with no URL the task files are written for import
elsewhere and the labels are read from the configured export files. No asset
here calls an LLM.
"""

import json

import dagster as dg
import polars as pl

from mama_pipeline.clinician._adjudication import majority_labels
from mama_pipeline.clinician._annotations import latest_per_annotator, parse_export
from mama_pipeline.clinician._clinician_agreement import AGREEMENT_COLUMNS, relevance_agreement, scope_agreement
from mama_pipeline.clinician._clinician_page import write_report
from mama_pipeline.clinician._estimates import ESTIMATE_JUDGMENT_COLUMNS, ESTIMATED, ppi_estimates, tie_scores
from mama_pipeline.clinician._label_studio import LabelStudio, token_from_env
from mama_pipeline.clinician._projects import annotations_version, label_config, push_tasks, read_exports
from mama_pipeline.clinician._synthetic import is_synthetic
from mama_pipeline.clinician._tasks import (
    CHUNK_COLUMNS,
    KINDS,
    POOL_COLUMNS,
    RELEVANCE,
    TASK_JUDGMENT_COLUMNS,
    label_studio_tasks,
    relevance_tasks,
    scope_tasks,
)
from mama_pipeline.common.file_ops import atomic_file
from mama_pipeline.common.metadata import md_table
from mama_pipeline.common.observed_inputs import observed_input
from mama_pipeline.common.shared_inputs import QUERIES
from mama_pipeline.resources import SettingsResource, StoreResource, data_path

GROUP = "clinician"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "clinician_tasks": "clinician.estimation_sample_size clinician.relevance_sample_size clinician.scope_sample_size clinician.seed judging.lenient_cut judging.strict_cut",
    "clinician_projects": "clinician.label_studio_url",
    "clinician_labels": "clinician.exports clinician.label_studio_url clinician.seed clinician.synthetic_annotators",
    "clinician_agreement": "clinician.min_annotations judging.lenient_cut judging.strict_cut",
    "clinician_confusion": "clinician.min_annotations judging.lenient_cut judging.strict_cut",
    "clinician_validated": "clinician.min_annotations",
    "clinician_estimates": "clinician.min_annotations clinician.min_estimation_pairs evaluation.cutoffs evaluation.lenient evaluation.max_grade evaluation.strict circularity.families llm.answer_grader llm.judge llm.query_writer llm.rubric_judge retrieval.retrievers systems.entries",
    "clinician_report": "clinician.min_annotations",
}
ANNOTATIONS = "clinician_annotations"
CHUNKS_TABLE = "corpus_chunks"  # the corpus group's asset and table: a relevance task's chunk


clinician_annotations = observed_input(
    ANNOTATIONS,
    GROUP,
    "Clinicians' annotations: on the Label Studio server (every annotation's id, update time and marks), or in "
    "the configured export files (sha256).",
    lambda s: annotations_version(s.clinician, s.resolve),
)
TASK_FILES = ("clinician", "label_studio")
EXPORT_FILES = ("clinician", "exports")
REPORT_DIR = ("reports", "clinician")


@dg.asset(
    group_name=GROUP,
    deps=[CHUNKS_TABLE],
    ins={
        "judgments": dg.AssetIn("judgments", metadata={"columns": TASK_JUDGMENT_COLUMNS}),
        "queries": QUERIES,
        "verdicts": dg.AssetIn("mamabench_scope_verdicts"),
        "adapted": dg.AssetIn("mamabench_adapted"),
        "pool": dg.AssetIn("pooled_pairs", metadata={"columns": POOL_COLUMNS}),
    },
    description="The seeded samples clinicians label: judged pairs stratified by tier x judge score band "
    "(agreement), pooled pairs drawn uniformly at random (estimation, clinician.estimation_sample_size), classified "
    "mamabench items by scope category (NONE included); task data without any LLM label.",
)
def clinician_tasks(
    settings: SettingsResource,
    store: StoreResource,
    judgments: pl.DataFrame,
    queries: pl.DataFrame,
    verdicts: pl.DataFrame,
    adapted: pl.DataFrame,
    pool: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    c, j = s.clinician, s.judging

    def chunks_of(ids: list[str]) -> pl.DataFrame:  # the sampled pairs' chunks alone
        return store.get().read_table(CHUNKS_TABLE, columns=CHUNK_COLUMNS, where={"chunk_id": ids})

    tasks = pl.concat(
        [
            relevance_tasks(
                judgments,
                queries,
                chunks_of,
                c.relevance_sample_size,
                c.seed,
                j.lenient_cut,
                j.strict_cut,
                pool,
                c.estimation_sample_size,
            ),
            scope_tasks(verdicts, adapted, c.scope_sample_size, c.seed),
        ]
    )
    strata = tasks.group_by("kind", "stratum").len().sort("kind", "stratum")
    return dg.Output(
        tasks,
        metadata={
            "tasks": tasks.height,
            "strata": md_table(strata),
            "estimation_sample": int(tasks["estimation_sample"].sum()),
        },
    )


@dg.asset(
    group_name=GROUP,
    description="The tasks as Label Studio JSON import files with the labelling configs (for teams annotating "
    "elsewhere), pushed to the configured Label Studio server: one project per kind, no duplicate tasks.",
)
def clinician_projects(
    context: dg.AssetExecutionContext, settings: SettingsResource, clinician_tasks: pl.DataFrame
) -> dg.MaterializeResult:
    c = settings.get().clinician
    folder = data_path(settings, *TASK_FILES)
    payloads = {kind: label_studio_tasks(clinician_tasks, kind) for kind in KINDS}
    for kind in KINDS:
        with atomic_file(folder / f"{kind}_tasks.json") as fh:
            json.dump(payloads[kind], fh, ensure_ascii=False, indent=1, sort_keys=True)
        with atomic_file(folder / f"{kind}_config.xml") as fh:
            fh.write(label_config(kind))
    meta: dict[str, object] = {
        "task_files": dg.MetadataValue.path(str(folder)),
        **{f"{k}/tasks": len(v) for k, v in payloads.items()},
    }
    if not c.label_studio_url:
        context.log.info("clinician.label_studio_url is empty: task files written, nothing pushed")
        return dg.MaterializeResult(metadata={**meta, "server": "(none configured)"})
    with LabelStudio(c.label_studio_url, token_from_env(c.token_env, c.label_studio_url), c.timeout_s) as ls:
        for kind in KINDS:
            r = push_tasks(ls, c.project_prefix, kind, payloads[kind], overlap=max(2, c.min_annotations))
            context.log.info(
                f"{kind}: project {r.project_id} ({'created' if r.created else 'found'}), "
                f"{r.pushed} tasks pushed, {r.already_there} already there"
            )
            meta.update(
                {
                    f"{kind}/project": dg.MetadataValue.url(r.project_url(c.label_studio_url)),
                    f"{kind}/pushed": r.pushed,
                    f"{kind}/already_there": r.already_there,
                }
            )
    return dg.MaterializeResult(metadata={**meta, "server": c.label_studio_url})


@dg.asset(
    group_name=GROUP,
    deps=[clinician_projects, ANNOTATIONS],
    description="Clinicians' annotations, one row per task and annotator (annotator id and times kept), from the "
    "Label Studio server or the configured export files; skipped or incomplete ones are listed with the problem; "
    "synthetic marks made-up annotations (the annotation or its task says so).",
)
def clinician_labels(
    context: dg.AssetExecutionContext, settings: SettingsResource, clinician_tasks: pl.DataFrame
) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    exports = read_exports(s.clinician, s.resolve, clinician_tasks)
    folder = data_path(settings, *EXPORT_FILES)
    frames = []
    for kind, (source, tasks) in sorted(exports.items()):
        with atomic_file(folder / f"{kind}_export.json") as fh:
            json.dump(tasks, fh, ensure_ascii=False, indent=1, sort_keys=True)
        frames.append(parse_export(tasks, source))
        context.log.info(f"{kind}: {len(tasks)} tasks read from {source}")
    labels, superseded = latest_per_annotator(pl.concat(frames) if frames else parse_export([], "(none)"))
    outside = labels.join(clinician_tasks.select("task_key"), on="task_key", how="anti")
    by_status = labels.group_by("kind", "status").len().sort("kind", "status")
    return dg.Output(
        labels,
        metadata={
            "labels": labels.height,
            "synthetic_labels": int(labels["synthetic"].sum()),
            "annotators": labels["annotator_id"].n_unique(),
            "tasks_annotated": labels["task_key"].n_unique(),
            "superseded_annotations": superseded,
            "labels_outside_current_sample": outside.height,
            "sources": ", ".join(src for src, _ in exports.values()) or "(none)",
            "by_status": md_table(by_status),
            "problems": md_table(
                labels.filter(pl.col("problem").is_not_null()).select("task_key", "annotator_id", "status", "problem")
            ),
        },
    )


@dg.multi_asset(
    group_name=GROUP,
    ins={"judgments": dg.AssetIn("judgments", metadata={"columns": AGREEMENT_COLUMNS})},
    outs={
        "clinician_agreement": dg.AssetOut(
            description="The relevance judge and the scope classifier against each "
            "clinician and the clinicians' majority; Krippendorff's alpha between "
            "clinicians."
        ),
        "clinician_confusion": dg.AssetOut(description="Confusion tables: LLM label (llm) against clinician label."),
    },
)
def clinician_agreement(
    settings: SettingsResource,
    clinician_labels: pl.DataFrame,
    judgments: pl.DataFrame,
    mamabench_scope_verdicts: pl.DataFrame,
):
    s = settings.get()
    majority = majority_labels(clinician_labels, s.clinician.min_annotations)
    rel_m, rel_c = relevance_agreement(
        judgments, clinician_labels, majority, s.judging.lenient_cut, s.judging.strict_cut
    )
    scope_m, scope_c = scope_agreement(mamabench_scope_verdicts, clinician_labels, majority)
    metrics, confusion = pl.concat([rel_m, scope_m]), pl.concat([rel_c, scope_c])
    yield dg.Output(metrics, output_name="clinician_agreement", metadata={"metrics": md_table(metrics, limit=80)})
    yield dg.Output(confusion, output_name="clinician_confusion", metadata={"cells": confusion.height})


@dg.asset(
    group_name=GROUP,
    description="The clinician-validated subset: tasks with at least clinician.min_annotations usable annotations, "
    "adjudicated by majority; ties are listed (tie = true, tied_on names the dimension) with no label; synthetic "
    "marks tasks adjudicated from any synthetic annotation.",
)
def clinician_validated(settings: SettingsResource, clinician_labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    validated = majority_labels(clinician_labels, settings.get().clinician.min_annotations)
    counts = validated.group_by("kind", "tie").len().sort("kind", "tie")
    return dg.Output(
        validated,
        metadata={
            "tasks": validated.height,
            "ties": int(validated["tie"].sum()),
            "synthetic_tasks": int(validated["synthetic"].sum()),
            "by_kind": md_table(counts),
        },
    )


@dg.asset(
    group_name=GROUP,
    deps=["rankings"],
    ins={
        "judgments": dg.AssetIn("judgments", metadata={"columns": ESTIMATE_JUDGMENT_COLUMNS}),
        "queries": QUERIES,
        "pool": dg.AssetIn("pooled_pairs", metadata={"columns": POOL_COLUMNS}),
    },
    description="Judge-only and prediction-powered P@k and wP@k (lenient, strict) per retriever and tier, with 95% "
    "intervals (ppi_py) from the judge's labels on every pair and the clinicians' majority labels on the uniform "
    "estimation sample; cells below the sample-size rule are refused with the reason; circularity flags beside.",
)
def clinician_estimates(
    settings: SettingsResource,
    store: StoreResource,
    clinician_tasks: pl.DataFrame,
    clinician_labels: pl.DataFrame,
    judgments: pl.DataFrame,
    queries: pl.DataFrame,
    pool: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    from mama_pipeline.circularity import circularity_flags, flag_table, retriever_notes
    from mama_pipeline.evaluation import StoredRun, mamaretrieval_plan

    s = settings.get()
    c, ev = s.clinician, s.evaluation
    names = s.retrieval.retriever_names
    decided = majority_labels(clinician_labels, c.min_annotations).filter(pl.col("kind") == RELEVANCE)
    majority = decided.filter(~pl.col("tie"))
    flags = circularity_flags(s)
    run = StoredRun(store.get(), names)  # read one retriever at a time
    estimates = ppi_estimates(
        run.of_retriever,
        run.retrievers,
        queries,
        pool,
        judgments,
        majority,
        clinician_tasks.filter(pl.col("estimation_sample")),
        mamaretrieval_plan(ev.cutoffs, ev.lenient, ev.strict, ev.max_grade),
        c.min_estimation_pairs,
        is_synthetic(clinician_labels),
        retriever_notes(flags, names),
        tie_scores(clinician_labels, decided.filter(pl.col("tie"))),
    )
    done = estimates.filter(pl.col("status") == ESTIMATED)
    return dg.Output(
        estimates,
        metadata={
            "design": estimates["design"][0] if estimates.height else "none",
            "estimated": done.height,
            "refused": estimates.height - done.height,
            "rule": f"at least {c.min_estimation_pairs} sampled pairs with a clinicians' majority label per cell, "
            "not all with one and the same clinicians-minus-judge difference",
            "synthetic_labels": is_synthetic(clinician_labels),
            "estimates": md_table(
                done.select(
                    "retriever",
                    "tier",
                    "label",
                    "judge_only",
                    "estimate",
                    "ci_low",
                    "ci_high",
                    "sampled",
                    "labelled",
                    "unresolved",
                    "tied",
                    "estimate_ties_low",
                    "estimate_ties_high",
                    "circularity",
                ),
                limit=60,
            ),
            "circularity": md_table(flag_table(flags)),
        },
    )


@dg.asset(
    group_name=GROUP,
    description="Static HTML page of the clinician validation: each LLM judge against each clinician and the "
    "majority, agreement between annotators (SYNTHETIC ones named so), confusion against the majority, judge-only "
    "and corrected figures with the unresolved pairs and the ties counted each way "
    "(reports/clinician/agreement.html).",
)
def clinician_report(
    settings: SettingsResource,
    clinician_agreement: pl.DataFrame,
    clinician_confusion: pl.DataFrame,
    clinician_validated: pl.DataFrame,
    clinician_labels: pl.DataFrame,
    clinician_estimates: pl.DataFrame,
) -> dg.MaterializeResult:
    page = write_report(
        data_path(settings, *REPORT_DIR),
        clinician_agreement,
        clinician_confusion,
        clinician_validated,
        clinician_labels,
        settings.get().clinician.min_annotations,
        clinician_estimates,
    )
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(str(page)),
            "report_url": dg.MetadataValue.url(page.as_uri()),
            "synthetic_labels": int(clinician_labels["synthetic"].sum()),
        }
    )
