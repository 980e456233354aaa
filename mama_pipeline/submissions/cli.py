"""``mama-pipeline submit``: check a submission file, store it, add its partition and score it.

The submission id is ``sub-`` + 16 hex of sha256 over the kind and the file's bytes, so the same file submitted
again is the same submission: when its partition has been materialised, nothing is asked and nothing is added
(the first record, its date included, is kept). The date is ``--date`` (YYYY-MM-DD), by default today's date in
UTC, stored once with the first submission. A bad file ends in one line naming file and line, before anything
is stored.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

from mama_pipeline.common.input_errors import InputError

# Dagster's console logger at WARNING: the run's warnings and errors reach the terminal, its DEBUG and INFO event
# lines (every step start, output, materialisation) stay in the instance's event log
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _date(value: str | None) -> str:
    if value is None:
        return dt.datetime.now(dt.UTC).date().isoformat()
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise InputError(f"--date {value!r}: expected YYYY-MM-DD") from None


def _judge(s, kind: str) -> tuple[str, str]:
    """(model, prompt hash) of what judges a run's holes or grades an answers file."""
    from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT
    from mama_pipeline.judging import RELEVANCE_JUDGE, label_prompt_hash, output_model
    from mama_pipeline.systems import SHORT_ANSWER_GRADER_PROMPT

    if kind == "retrieval":
        return s.llm.model_of(s.llm.judge), label_prompt_hash(RELEVANCE_JUDGE, output_model(s.llm.judge.reasoning))
    return (
        f"short_answer={s.llm.model_of(s.llm.answer_grader)}; rubric={s.llm.model_of(s.llm.rubric_judge)}",
        f"short_answer={SHORT_ANSWER_GRADER_PROMPT.hash}; rubric={RUBRIC_JUDGE_PROMPT.hash}",
    )


def check(path: Path, kind: str, s, corpus_version: str | None) -> str:
    """Read the file against the store's ids; returns the corpus version. Raises InputError on a bad file."""
    from mama_pipeline.store import Store
    from mama_pipeline.submissions._submission_files import read_answers_file, read_run_file
    from mama_pipeline.submissions._submission_inputs import corpus, retrieval_tracks, system_items

    db = Store(s.db_path)
    chunk_ids, version = corpus(db)
    if corpus_version is not None and corpus_version != version:
        raise InputError(f"{path}: made on corpus version {corpus_version}, the store holds {version}")
    if kind == "retrieval":
        read_run_file(path, {q for t in retrieval_tracks(db, s) for q in t.query_ids}, chunk_ids)
    else:
        every, _, _ = system_items(db, s)
        read_answers_file(path, set(every["item_id"].to_list()), chunk_ids)
    return version


def submit(
    path: str, kind: str, name: str, model: str | None, link: str | None, date: str | None, corpus_version: str | None
) -> int:
    import dagster as dg

    from mama_pipeline.common.dagster_home import dagster_home
    from mama_pipeline.common.file_ops import sha256_file
    from mama_pipeline.partitions import SUBMISSIONS
    from mama_pipeline.settings import load_settings
    from mama_pipeline.store import Store
    from mama_pipeline.submissions import _records as records
    from mama_pipeline.submissions._submission_files import submission_id
    from mama_pipeline.submissions.assets import submission_folder, submission_scores

    s = load_settings()
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{source}: submission file does not exist")
    if not name.strip():
        raise InputError("--name must not be empty")
    sid = submission_id(kind, source.read_bytes())
    db = Store(s.db_path)
    home = dagster_home(s.data_path)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        stored = records.find(db, sid)
        key = submission_scores.key
        if stored is not None and sid in instance.get_materialized_partitions(key):
            print(f"{sid}: already submitted on {stored.submitted_on} as {stored.name!r}; nothing asked, nothing added")
            return 0
        version = check(source, kind, s, corpus_version)  # nothing is stored before the file is known good
        folder = submission_folder(s, sid)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / source.name)
        judge_model, prompt_hash = _judge(s, kind)
        records.add(
            db,
            records.Submission(
                submission_id=sid,
                kind=kind,
                name=name,
                model=model,
                link=link,
                submitted_on=_date(date),
                files_json=json.dumps([{"name": source.name, "sha256": sha256_file(folder / source.name)}]),
                judge_model=judge_model,
                judge_prompt_sha256=prompt_hash,
                corpus_version=version,
            ),
        )
        if not instance.has_dynamic_partition(SUBMISSIONS.name, sid):
            instance.add_dynamic_partitions(SUBMISSIONS.name, [sid])
        print(f"{sid}: {kind} submission {name!r} stored under {folder}; scoring", flush=True)
        from mama_pipeline.definitions import defs  # the same definitions, resources and code version as any run

        job = defs.resolve_implicit_job_def_def_for_assets([key])
        result = job.execute_in_process(
            instance=instance,
            asset_selection=[key],
            partition_key=sid,
            tags={"mama/trigger": "cli", "mama/submission": sid},
            raise_on_error=False,
            run_config=QUIET,
        )
    if not result.success:
        failures = [ev for ev in result.all_events if ev.is_step_failure]
        reason = failures[0].step_failure_data.error.message.strip().splitlines()[-1] if failures else "run failed"
        print(f"FAILED submission_scores[{sid}]: {reason}", flush=True)
        return 1
    for row in db.query("SELECT * FROM submission_tracks WHERE submission_id = ? ORDER BY track", [sid]).iter_rows(
        named=True
    ):
        print(
            f"  {row['track']}: {row['n_scored']} of {row['n_items']} scored, {row['n_unanswered']} unanswered, "
            f"{row['n_invalid']} invalid, {row['n_grade_failed']} failed, {row['n_holes_judged']} holes judged"
            + (f"; REFUSED: {row['refused']}" if row["refused"] else ""),
            flush=True,
        )
    return 0
