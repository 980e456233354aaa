"""Every track's answers of one system graded: mcq by key, short answers and rubric items by their grader stage."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import polars as pl

from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT, RubricVerdict
from mama_pipeline.llm.client import LLMClient, RunReport
from mama_pipeline.systems import _grading as grading
from mama_pipeline.systems._bounds import GRADER_STAGES
from mama_pipeline.systems._systems_prompts import SHORT_ANSWER_GRADER_PROMPT, ShortAnswerGrade


def grade_answers(
    answers: pl.DataFrame,
    items: pl.DataFrame,
    criteria: pl.DataFrame,
    client: Callable[[str], AbstractContextManager[LLMClient]],
    mcq_output: str,
    answer_failures: str,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """(grades with the grader of each row, the grader calls' metadata); ``client(stage)`` opens a grader stage."""
    rows = grading.mcq_grades(answers, items, mcq_output)
    meta: dict[str, Any] = {}
    graders: dict[str, str] = {}
    for track, build, grade, template, model in (
        (
            "short_answer",
            lambda: grading.short_answer_requests(answers, items),
            lambda rep: grading.short_answer_grades(answers, items, rep),
            SHORT_ANSWER_GRADER_PROMPT,
            ShortAnswerGrade,
        ),
        (
            "rubric",
            lambda: grading.rubric_requests(answers, items, criteria),
            lambda rep: grading.rubric_grades(answers, items, criteria, rep),
            RUBRIC_JUDGE_PROMPT,
            RubricVerdict,
        ),
    ):
        if answers.filter(pl.col("track") == track).is_empty():
            continue
        requests = build()
        if requests:
            with client(GRADER_STAGES[track]) as opened:
                report = opened.run(template, model, requests)
            meta.update(report.metadata())
            graders[track] = f"{report.model} @ {report.endpoint}"
        else:
            report = RunReport(GRADER_STAGES[track], "", "", template.id, template.hash, [])
        rows += grade(report)
    grades = grading.grades_frame(rows, answer_failures)
    grades = grades.with_columns(pl.Series("grader", [graders.get(t) for t in grades["track"]], dtype=pl.String))
    return grades, meta
