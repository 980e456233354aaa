"""Dagster assets of answering-system evaluation (group ``systems``), thin over the pure modules.

Inputs from other areas: ``mamabench_items``, ``mamabench_criteria``,
``corpus_chunks`` (read from the store by RAG systems only) and the calibration
harness. ``system_answers`` and ``system_grades`` have one partition per
configured system (static, from ``systems.entries``, given by the area's ``build_defs``), so
adding a system asks only that system; answers and grades are cached by content
in the shared LLM client, so a re-run asks nothing and a changed grader prompt
re-grades without re-asking answers.
"""

import json
from dataclasses import replace
from typing import Any

import dagster as dg
import polars as pl

from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT
from mama_pipeline.circularity import circularity_notes, flag_table, system_flags
from mama_pipeline.common.markdown import METADATA
from mama_pipeline.common.metadata import FAILURES_SHOWN
from mama_pipeline.common.metadata import md_table as metadata_table
from mama_pipeline.common.observed_inputs import observed_input
from mama_pipeline.evaluation import refused_rows, system_gaps
from mama_pipeline.llm.embedded_banner import STAGE_WORDS, embedded_banner
from mama_pipeline.resources import LLMResource, SettingsResource, StoreResource, data_path
from mama_pipeline.retrieval import retriever_versions
from mama_pipeline.systems import _answering as answering
from mama_pipeline.systems import _grading as grading
from mama_pipeline.systems._bounds import GRADER_STAGES, failure_stages, refusals
from mama_pipeline.systems._comparisons import compare_systems
from mama_pipeline.systems._graders import grade_answers
from mama_pipeline.systems._items import benchmark_items, over_max_criteria, sample_items
from mama_pipeline.systems._systems_page import SystemsReport, no_rubric_grade_note, sample_note, write_report
from mama_pipeline.systems._systems_prompts import SHORT_ANSWER_GRADER_PROMPT
from mama_pipeline.systems._systems_scoreboard import scoreboard

GROUP = "systems"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "systems_items": "systems.items_per_track systems.max_rubric_criteria systems.sample_seed",
    # its own retriever's entry: system_retriever_files
    "system_answers": "llm.embedded_server retrieval.retrievers@observed systems.entries",
    "system_grades": "llm.answer_grader llm.embedded_server llm.rubric_judge systems.answer_failures systems.entries",
    "system_scoreboard": "circularity.families llm.answer_grader llm.judge llm.query_writer llm.rubric_judge retrieval.retrievers systems.answer_failures systems.confidence systems.entries systems.resamples systems.seed",
    "system_comparisons": "llm.answer_grader llm.rubric_judge systems.confidence systems.entries systems.resamples systems.seed",
    "systems_report": "circularity.families llm.answer_grader llm.judge llm.query_writer llm.rubric_judge mamabench.widely_trained_pools release.held_out retrieval.retrievers systems",
}
RETRIEVER_FILES = "system_retriever_files"  # the RAG systems' retrievers' versions (retrieval/_retriever_versions.py)


system_retriever_files = observed_input(
    RETRIEVER_FILES,
    GROUP,
    "The versions of the retrievers the RAG systems use (each one's settings entry, depth and model files: "
    "retrieval/_retriever_versions.py), by system; a change to a retriever no system uses is none here.",
    lambda s: json.dumps(
        {c.name: retriever_versions(s.retrieval, s.resolve)[c.retriever] for c in s.systems.entries if c.retriever},
        sort_keys=True,
    ),
)


REPORT_DIR = ("reports", "systems")
HARNESS_LABELS = dg.AssetKey("calibration_judge_labels")


def md_table(df: pl.DataFrame) -> dg.MetadataValue:
    """Every row, cells cut to 200 characters."""
    return metadata_table(df, limit=None, cells=replace(METADATA, cut=200))


def _system_stage(name: str) -> str:
    return f"system:{name}"


@dg.asset(
    group_name=GROUP,
    ins={"items": dg.AssetIn("mamabench_items")},
    description="The mamabench items every system answers: a seeded per-track sample (or all), with track, "
    "pool and scope category (PRESCOPED for pre-scoped pools).",
)
def systems_items(settings: SettingsResource, items: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    cfg = settings.get().systems
    every = benchmark_items(items)
    picked = sample_items(every, cfg.items_per_track, cfg.sample_seed, cfg.max_rubric_criteria)
    counts = picked.group_by("track").len().sort("track")
    left_out = over_max_criteria(every, cfg.max_rubric_criteria)
    return dg.Output(
        picked,
        metadata={
            "benchmark_items": every.height,
            "items": picked.height,
            **{f"items/{t}": n for t, n in counts.iter_rows()},
            "items_per_track": cfg.items_per_track or "all",
            "sample_seed": cfg.sample_seed,
            "rubric_items_over_max_criteria": left_out,
        },
    )


@dg.asset(  # partitioned per system by build_defs (mama_pipeline.partitions)
    group_name=GROUP,
    ins={"items": dg.AssetIn("systems_items")},
    deps=["corpus_chunks", RETRIEVER_FILES],  # a RAG system's retriever reads its model
    description="One answer per item of the system's tracks (partition = system): status, answer, raw text, "
    "the chunk ids a RAG system was given, prompt hash; failed calls stay rows with their reason.",
)
def system_answers(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    llm: LLMResource,
    items: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    cfg = s.systems.system(context.partition_key)
    mine = items.filter(pl.col("track").is_in(cfg.tracks))
    contexts, meta = _contexts(context, settings, store, cfg, mine)
    frames, reports = [], []
    with llm.client_for(_system_stage(cfg.name), cfg, context) as client:
        tracks = [answering.track_requests(cfg, track, mine, contexts) for track in cfg.tracks]
        client.check_budget((t, m, r) for t, m, r, _ in tracks)  # every track, before the first is sent
        for track, (template, model, requests, given) in zip(cfg.tracks, tracks):
            if not requests:
                continue
            report = client.run(template, model, requests)
            reports.append(report)
            frames.append(answering.answer_rows(cfg.name, track, template, report, given))
            meta.update({f"{track}/{k.split('/', 1)[1]}": v for k, v in report.metadata().items()})
    answers = pl.concat(frames) if frames else pl.DataFrame(schema=answering.ANSWERS_SCHEMA)
    failed = answers.filter(pl.col("status") != "ok")
    context.log.info(
        f"{cfg.name}: {answers.height} answers, {failed.height} failed, {sum(r.calls for r in reports)} HTTP calls"
    )
    return dg.Output(
        answers.sort("track", "item_id"),
        metadata={
            **meta,
            "mode": cfg.mode,
            "answers": answers.height,
            "failed": failed.height,
            "http_calls": sum(r.calls for r in reports),
            "failures": md_table(failed.select("track", "item_id", "status", "error").head(FAILURES_SHOWN)),
        },
    )


@dg.asset(  # partitioned per system by build_defs (mama_pipeline.partitions)
    group_name=GROUP,
    ins={
        "answers": dg.AssetIn("system_answers"),
        "items": dg.AssetIn("systems_items"),
        "criteria": dg.AssetIn("mamabench_criteria"),
    },
    description="One grade per answer (partition = system): mcq letter vs key (invalid counted wrong), short "
    "answers by the grader stage, rubric items by the rubric judge with HealthBench's example score.",
)
def system_grades(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    llm: LLMResource,
    answers: pl.DataFrame,
    items: pl.DataFrame,
    criteria: pl.DataFrame,
) -> dg.Output[pl.DataFrame]:
    s = settings.get()
    cfg = s.systems.system(context.partition_key)
    grades, meta = grade_answers(
        answers, items, criteria, lambda stage: llm.client(stage, context), cfg.mcq_output, s.systems.answer_failures
    )
    by_status = grades.group_by("track", "status").len().sort("track", "status")
    failed = grades.filter(pl.col("status") != grading.GRADED)
    return dg.Output(
        grades,
        metadata={
            **meta,
            "grades": grades.height,
            **{f"{t}/{st}": n for t, st, n in by_status.iter_rows()},
            "invalid_answers": int(grades["invalid"].fill_null(False).sum()),
            "answer_failures_policy": s.systems.answer_failures,
            "failures": md_table(failed.select("track", "item_id", "status", "error").head(FAILURES_SHOWN)),
        },
    )


@dg.asset(
    group_name=GROUP,
    ins={"grades": dg.AssetIn("system_grades"), "harness": dg.AssetIn("calibration_harness_report")},
    description="Per system, track and segment (all, scope category, pool): mean with its bootstrap interval, "
    "unanswered items with the mean over answered items and the mean with them as 0, invalid answers, grader "
    "failures; figures over a failure bound refused; rubric rows carry the rubric grader's agreement with "
    "physicians.",
)
def system_scoreboard(
    settings: SettingsResource, grades: pl.DataFrame, harness: pl.DataFrame
) -> dg.Output[pl.DataFrame]:
    cfg = settings.get().systems
    refused = refusals(failure_stages(grades, settings.get()))
    board = scoreboard(grades, harness, cfg.resamples, cfg.seed, cfg.confidence, cfg.answer_failures, refused)
    overall = board.filter(pl.col("segment_kind") == "all").select(
        "system",
        "track",
        "n_items",
        "n_scored",
        "mean",
        "ci_low",
        "ci_high",
        "n_unanswered",
        "mean_answered",
        "mean_unanswered_as_0",
        "n_invalid",
        "n_grade_failed",
        "grader_macro_f1",
    )
    return dg.Output(
        board,
        metadata={
            "rows": board.height,
            "resamples": cfg.resamples,
            "seed": cfg.seed,
            "answer_failures": cfg.answer_failures,
            "overall": md_table(overall),
            "refused": "; ".join(refused.values()) or "none",
            "intervals_refused": refused_rows(board.filter(pl.col("mean").is_not_null()), "interval_refused"),
            "circularity": md_table(flag_table(system_flags(settings.get()))),
        },
    )


@dg.asset(
    group_name=GROUP,
    ins={"grades": dg.AssetIn("system_grades")},
    description="Paired tests between systems per track (bootstrap CI, randomization, exact McNemar on mcq), "
    "and each RAG system against its closed-book baseline per scope category; Holm per family; none for a "
    "system and track over a failure bound.",
)
def system_comparisons(settings: SettingsResource, grades: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    cfg = settings.get().systems
    baselines = {s.name: s.baseline for s in cfg.entries if s.baseline}
    refused = refusals(failure_stages(grades, settings.get()))
    table = compare_systems(grades, baselines, cfg.resamples, cfg.seed, cfg.confidence, refused)
    significant = table.filter(pl.col("p_randomization_holm") < cfg.alpha).height if table.height else 0
    return dg.Output(
        table,
        metadata={
            "comparisons": table.height,
            "significant_after_holm": significant,
            "refused": "; ".join(refused.values()) or "none",
            "figures_refused": refused_rows(table),  # an interval or p not computed: its reason in refused
        },
    )


@dg.asset(
    group_name=GROUP,
    ins={
        "board": dg.AssetIn("system_scoreboard"),
        "comparisons": dg.AssetIn("system_comparisons"),
        "grades": dg.AssetIn("system_grades"),
        "answers": dg.AssetIn("system_answers"),
        "harness": dg.AssetIn("calibration_harness_report"),
    },
    description="HTML report (scoreboard with error bars, closed-book vs RAG deltas per category, significance, "
    "the rubric grader's agreement with physicians, failures) and per-item result files per system.",
)
def systems_report(
    context: dg.AssetExecutionContext,
    settings: SettingsResource,
    store: StoreResource,
    board: pl.DataFrame,
    comparisons: pl.DataFrame,
    grades: pl.DataFrame,
    answers: pl.DataFrame,
    harness: pl.DataFrame,
) -> dg.MaterializeResult:
    s = settings.get()
    notes = _report_notes(context, s, grades, store)
    rule = s.release.held_out.rule("item_id")  # the system_held_out_scoreboard's figures, computed the same way
    page = write_report(
        SystemsReport(
            board=board,
            comparisons=comparisons,
            grades=grades,
            answers=answers,
            systems=[_describe(c) for c in s.systems.entries],
            grader=_grader_lines(s),
            harness=harness,
            notes=notes,
            banners=embedded_banner(s.llm, GRADER_STAGES.values(), [c.name for c in s.systems.entries if c.embedded]),
            alpha=s.systems.alpha,
            answer_failures=s.systems.answer_failures,
            rubric_parse_retries=s.llm.rubric_judge.parse_retries,
            held_out=system_gaps(grades, rule, s.systems.resamples, s.systems.seed) if rule.active else None,
            held_out_rule=rule,
            resamples=s.systems.resamples,
            seed=s.systems.seed,
        ),
        data_path(settings, *REPORT_DIR),
    )
    return dg.MaterializeResult(
        metadata={
            "report": dg.MetadataValue.path(str(page)),
            "report_url": dg.MetadataValue.url(page.as_uri()),
            "item_files": dg.MetadataValue.path(str(page.parent / "items")),
            "notes": "\n".join(notes),
        }
    )


ASSETS = [systems_items, system_answers, system_grades, system_scoreboard, system_comparisons, systems_report]
PARTITIONED = [system_answers, system_grades]  # one partition per configured system


def _contexts(context, settings: SettingsResource, store: StoreResource, cfg, items: pl.DataFrame):
    """Retrieved chunks per item for a RAG system (empty for closed-book), and retrieval metadata."""
    if cfg.mode != "rag" or items.is_empty():
        return pl.DataFrame(schema=answering.CONTEXT_SCHEMA), {}
    from mama_pipeline.retrieval import retrieval_env, run_retriever

    s = settings.get()
    db = store.get()
    chunks = db.read_table("corpus_chunks")

    def no_stored_runs(names: list[str], query_ids: list[str]) -> pl.DataFrame:
        raise ValueError(f"system {cfg.name!r}: a fused retriever cannot rank mamabench items")

    env = retrieval_env(s, db, context.log.info, no_stored_runs)
    out = run_retriever(s.retrieval.retriever(cfg.retriever), chunks, answering.retrieval_queries(items), cfg.k, env)
    contexts = answering.contexts_from_rankings(out.rankings, chunks, cfg.k)
    meta = {
        f"retrieval/{k}": ("none" if v is None else v)
        for k, v in out.metadata.items()
        if isinstance(v, (str, int, float, bool)) or v is None
    }
    return contexts, meta


def _describe(cfg) -> dict[str, Any]:
    return {
        "system": cfg.name,
        "mode": cfg.mode,
        "model": cfg.model or "(embedded)",
        "endpoint": ", ".join(cfg.base_urls) or "(embedded)",
        "retriever": cfg.retriever or "",
        "k": cfg.k if cfg.mode == "rag" else None,
        "baseline": cfg.baseline or "",
        "tracks": ", ".join(cfg.tracks),
        "mcq_output": cfg.mcq_output,
    }


def _grader_lines(s) -> dict[str, str]:
    out = {}
    for track, stage in GRADER_STAGES.items():
        cfg = getattr(s.llm, stage)
        where = f"{cfg.model} @ {', '.join(cfg.base_urls)}" if cfg.base_urls else "the embedded smoke-test model"
        prompt = SHORT_ANSWER_GRADER_PROMPT if track == "short_answer" else RUBRIC_JUDGE_PROMPT
        out[f"{track.replace('_', ' ')} ({STAGE_WORDS[stage]})"] = f"{where}; prompt {prompt.id} {prompt.hash}"
    return out


def _report_notes(context, s, grades: pl.DataFrame, store: StoreResource) -> list[str]:
    cfg = s.systems
    left_out = 0
    if cfg.max_rubric_criteria:
        left_out = over_max_criteria(
            benchmark_items(store.get().read_table("mamabench_items")), cfg.max_rubric_criteria
        )
    notes = [
        sample_note(
            grades["item_id"].n_unique(), cfg.items_per_track, cfg.sample_seed, cfg.max_rubric_criteria, left_out
        )
        + f"; {cfg.resamples} resamples, seed {cfg.seed}, {cfg.confidence:.0%} intervals."
    ]
    notes.append(_harness_match(context, grades))
    notes += circularity_notes(system_flags(s))
    if s.mamabench.widely_trained_pools:
        notes.append(
            f"Pools widely used for training: {', '.join(s.mamabench.widely_trained_pools)} (as configured). "
            "A system may have seen their items in training: compare its "
            "score on them with its score on the other pools in the 'by pool' tables."
        )
    return notes


def _harness_match(context, grades: pl.DataFrame) -> str:
    """Whether the calibration harness ran with the rubric grader that graded these answers."""
    used = sorted(set(grades.filter(pl.col("track") == "rubric")["grader"].drop_nulls().to_list()))
    event = context.instance.get_latest_materialization_event(HARNESS_LABELS)
    meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
    model, endpoint, prompt = (meta.get(f"rubric_judge/{k}") for k in ("model", "endpoint", "prompt_hash"))
    if not used:
        return no_rubric_grade_note(grades)
    if model is None:
        return "The calibration harness run is not recorded on this instance: grader agreement may be stale."
    harness = f"{model.value} @ {endpoint.value}"
    if used == [harness] and prompt.value == RUBRIC_JUDGE_PROMPT.hash:
        return f"The calibration harness ran with the same rubric grader ({harness}, prompt {prompt.value})."
    return (
        f"WARNING: the calibration harness ran with {harness} (prompt {prompt.value}), but rubric grades came "
        f"from {', '.join(used)} (prompt {RUBRIC_JUDGE_PROMPT.hash}): re-materialise calibration_judge_labels."
    )
