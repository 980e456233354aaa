"""Dagster asset of submissions (group ``submissions``): one dynamic partition per accepted submission.

``mama-pipeline submit`` checks a file, stores it under ``<data_dir>/submissions/<submission_id>/`` with its row
in the ``submissions`` table, adds the partition and materialises it. Inputs are read from the store: the
release's queries and labels (``generated_queries``, ``judgments``, the robustness and multi-passage tracks'
tables), the corpus, and mamabench's items and criteria.
"""

import json
from pathlib import Path

import dagster as dg
import polars as pl

from mama_pipeline.common.metadata import md_table
from mama_pipeline.partitions import SUBMISSIONS
from mama_pipeline.resources import LLMResource, SettingsResource, StoreResource
from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store
from mama_pipeline.submissions import _records as records
from mama_pipeline.submissions._submission_files import read_answers_file, read_run_file

GROUP = "submissions"
SETTINGS_READ = {  # the settings each asset reads, ``section`` or ``section.field`` (common/code_version.py)
    "submission_scores": "evaluation judging llm multipassage release retrieval robustness systems",
}
FOLDER = "submissions"
READS = [
    "generated_queries",
    "corpus_chunks",
    "judgments",
    "query_variants",
    "variant_labels",
    "multipassage_questions",
    "multipassage_labels",
    "multipassage_fact_labels",
    "mamabench_items",
    "mamabench_criteria",
]


def submission_folder(s: PipelineSettings, submission_id: str) -> Path:
    return s.data_path / FOLDER / submission_id


@dg.asset(
    group_name=GROUP,
    partitions_def=SUBMISSIONS,
    deps=READS,
    description="A submission's scores (partition = submission_id), in submission_per_query and submission_tracks. "
    "A run: its unlabelled top-k pairs judged with the configured judge and prompt (holes only), then every "
    "configured measure with Judged@k per query and track. An answers file: graded by the configured graders "
    "under the systems' failure rules.",
)
def submission_scores(
    context: dg.AssetExecutionContext, settings: SettingsResource, store: StoreResource, llm: LLMResource
) -> dg.MaterializeResult:
    s, db = settings.get(), store.get()
    sid = context.partition_key
    record = records.find(db, sid)
    if record is None:
        raise dg.Failure(f"submission {sid} has no row in the submissions table: add it with mama-pipeline submit")
    path = submission_folder(s, sid) / record.file_names[0]
    if record.kind == "retrieval":
        per_query, tracks, meta = _retrieval(context, s, db, llm, path)
    else:
        per_query, tracks, meta = _answers(context, s, db, llm, sid, path)
    records.write_scores(
        db, sid, per_query.with_columns(submission_id=pl.lit(sid)), tracks.with_columns(submission_id=pl.lit(sid))
    )
    for row in tracks.iter_rows(named=True):
        context.log.info(
            f"submission {sid} {row['track']}: {row['n_scored']} of {row['n_items']} scored, "
            f"{row['n_holes_judged']} holes judged" + (f"; refused: {row['refused']}" if row["refused"] else "")
        )
    return dg.MaterializeResult(
        metadata={
            "submission_id": sid,
            "kind": record.kind,
            "name": record.name,
            "model": record.model or "",
            "link": record.link or "",
            "submitted_on": record.submitted_on,
            "files": dg.MetadataValue.json(json.loads(record.files_json)),
            "judge_model": record.judge_model or "",
            "judge_prompt_sha256": record.judge_prompt_sha256 or "",
            "corpus_version": record.corpus_version or "",
            "tracks": md_table(tracks),
            "per_query_values": per_query.height,
            **meta,
        }
    )


def _retrieval(context, s: PipelineSettings, db: Store, llm: LLMResource, path: Path):
    from mama_pipeline.judging import judge_pairs, output_model
    from mama_pipeline.multipassage import chunk_lookup, fact_judge_template, label_facts
    from mama_pipeline.submissions._retrieval_scores import (
        TRACK_ORDER,
        judge_track_holes,
        score_track_run,
        tracks_covered,
    )
    from mama_pipeline.submissions._submission_inputs import corpus, retrieval_tracks

    chunk_ids, _ = corpus(db)
    tracks = retrieval_tracks(db, s)
    run = read_run_file(path, {q for t in tracks for q in t.query_ids}, chunk_ids)
    covered = tracks_covered(run, tracks)
    chunks = db.read_table("corpus_chunks")
    queries = db.read_table("generated_queries").select("query_id", "query_text")
    reasoning = s.llm.judge.reasoning == "json_field"
    runs, fact_reports = [], []
    with llm.client("judge", context) as client:

        def judge(track, pairs: pl.DataFrame) -> pl.DataFrame:
            asked = queries if track.name != "multipassage" else track.questions.select("query_id", "query_text")
            result = judge_pairs(
                client,
                db,
                pairs,
                asked,
                chunks,
                answer_model=output_model(s.llm.judge.reasoning),
                batch_pairs=s.judging.batch_pairs,
            )
            runs.append(result)
            return result.outcomes

        def facts(track, pairs: pl.DataFrame) -> pl.DataFrame:
            lookup = chunk_lookup(chunks, set(pairs["chunk_id"].to_list()))
            labels, reports = label_facts(
                client,
                fact_judge_template(reasoning),
                reasoning,
                pairs.with_columns(is_seed=pl.lit(False)),
                track.questions,
                lookup,
            )
            fact_reports.extend(reports.values())
            return labels

        outcomes = judge_track_holes(run, covered, judge, facts)
    results = [
        score_track_run(run, t, *outcomes[t.name], s.evaluation, s.multipassage, s.llm.judge.max_failure_rate)
        for t in sorted(covered, key=lambda t: TRACK_ORDER.index(t.name))
    ]
    per_query = pl.concat([r.per_query for r in results])
    meta = {
        "run_rows": run.height,
        "run_queries": run["query_id"].n_unique(),
        "judge/asked": sum(r.asked for r in runs),
        "judge/http_calls": sum(r.calls for r in runs),
        "judge/new_labels": sum(r.new_labels for r in runs),
        "fact_judge/asked": sum(len(r.results) for r in fact_reports),
        "fact_judge/http_calls": sum(r.calls for r in fact_reports),
        "depths": ", ".join(f"{t.name}={t.depth}" for t in covered),
    }
    return per_query, pl.DataFrame([r.counts for r in results]), meta


def _answers(context, s: PipelineSettings, db: Store, llm: LLMResource, sid: str, path: Path):
    from mama_pipeline.submissions._answer_scores import score_answers
    from mama_pipeline.submissions._submission_inputs import corpus, system_items

    every, sample, criteria = system_items(db, s)
    chunk_ids, _ = corpus(db)
    submitted = read_answers_file(path, set(every["item_id"].to_list()), chunk_ids)
    return score_answers(sid, submitted, sample, criteria, lambda stage: llm.client(stage, context), s)


ASSETS = [submission_scores]
