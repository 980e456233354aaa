"""A submitted answers file graded like a configured system (:mod:`mama_pipeline.systems`).

Tracks: every track with at least one answer in the file is graded on every item of the systems' sample in
that track (``systems.items_per_track``, ``sample_seed``: the items the configured systems answer). An item of
such a track absent from the file is unanswered (``answer_failed``), counted as ``systems.answer_failures``
says; an empty answer is the system's own output that cannot be graded (invalid, score 0). mcq answers are a
letter, or a text with ``Answer: X`` (the simple-evals rule). The failure bound is ``DEFAULT_BOUND``, the
``max_failure_rate`` a configured system gets unless its entry sets one; over it, or over a grader stage's
bound, the track's figures are refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import polars as pl

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.failure_bounds import system_failures
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.systems import (
    ANSWER_FAILED,
    ANSWERS_SCHEMA,
    GRADE_FAILED,
    GRADER_STAGES,
    LETTERS,
    PARSE_FAILED,
    extract_letter,
    grade_answers,
    refusals,
)

DEFAULT_BOUND = StageSettings.model_fields["max_failure_rate"].default
ABSENT = "absent from the answers file"
BARE_LETTER = re.compile(r"\s*\(?([A-Za-z])\)?[.)]?\s*")


def _mcq_letter(answer: str, n_choices: int) -> str:
    """The letter an mcq answer gives (a bare letter, or 'Answer: X'); the text itself when it gives none."""
    bare = BARE_LETTER.fullmatch(answer)
    if bare:
        return bare.group(1).upper()
    return extract_letter(answer, LETTERS[:n_choices]) or answer


def answer_rows(submission_id: str, submitted: pl.DataFrame, sample: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """(the answer rows of every sample item of the tracks the file covers, answers to items outside the sample)."""
    given = {r["item_id"]: r for r in submitted.iter_rows(named=True)}
    covered = set(sample.filter(pl.col("item_id").is_in(list(given)))["track"].to_list())
    rows = []
    for item_id, track, raw in (
        sample.filter(pl.col("track").is_in(list(covered))).select("item_id", "track", "item_json").iter_rows()
    ):
        row = {k: None for k in ANSWERS_SCHEMA} | {
            "system": submission_id,
            "item_id": item_id,
            "track": track,
            "chunk_ids": [],
        }
        answer = given.get(item_id)
        if answer is None:
            row.update(status=ANSWER_FAILED, error=ABSENT)
        elif not answer["answer"].strip():
            row.update(
                status=PARSE_FAILED,
                error="empty answer",
                raw_text=answer["answer"],
                chunk_ids=answer["cited_chunk_ids"],
            )
        else:
            text = answer["answer"]
            if track == "mcq":
                text = _mcq_letter(text, len(json.loads(raw)["choices"]))
            row.update(status="ok", answer=text, raw_text=answer["answer"], chunk_ids=answer["cited_chunk_ids"])
        rows.append(row)
    outside = len(set(given) - set(sample["item_id"].to_list()))
    return pl.DataFrame(rows, schema=ANSWERS_SCHEMA), outside


def score_answers(
    submission_id: str,
    submitted: pl.DataFrame,
    sample: pl.DataFrame,
    criteria: pl.DataFrame,
    client: Callable[[str], AbstractContextManager[LLMClient]],
    settings,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """(per-item scores, per-track counts, metadata) of one answers file."""
    answers, outside = answer_rows(submission_id, submitted, sample)
    grades, meta = grade_answers(answers, sample, criteria, client, "json_schema", settings.systems.answer_failures)
    graders = {t: (stage, getattr(settings.llm, stage).max_failure_rate) for t, stage in GRADER_STAGES.items()}
    refused = refusals(system_failures(grades, {submission_id: DEFAULT_BOUND}, graders))
    per_query, tracks = [], []
    for (track,), block in sorted(grades.group_by("track"), key=lambda kv: kv[0]):
        reason = refused.get((submission_id, track))
        per_query.append(
            block.select(
                pl.lit(track).alias("track"),
                pl.col("item_id").alias("query_id"),
                pl.lit("score").alias("measure"),
                (pl.lit(None, pl.Float64) if reason else pl.col("score")).alias("value"),
            )
        )
        status = block["status"]
        tracks.append(
            {
                "track": track,
                "n_items": block.height,
                "n_scored": int(block["score"].is_not_null().sum()),
                "n_unanswered": int((status == ANSWER_FAILED).sum()),
                "n_invalid": int(block["invalid"].fill_null(False).sum()),
                "n_grade_failed": int((status == GRADE_FAILED).sum()),
                "n_holes_judged": 0,
                "refused": reason,
            }
        )
    meta.update(
        {
            "answers_outside_the_sample": outside,
            "failure_bound": DEFAULT_BOUND,
            "answer_failures": settings.systems.answer_failures,
        }
    )
    per_query_frame = (
        pl.concat(per_query)
        if per_query
        else pl.DataFrame(schema={"track": pl.String, "query_id": pl.String, "measure": pl.String, "value": pl.Float64})
    )
    return per_query_frame, pl.DataFrame(tracks), meta
