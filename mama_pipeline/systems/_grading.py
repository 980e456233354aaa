"""Grades of one system's answers, by track.

- mcq: the letter (JSON-schema answer, or the simple-evals extraction rule on a
  free-text answer) against the key; a readable answer with no letter of the
  item's options is ``invalid`` and counts as wrong.
- short answer: the grader stage's verdict against the clinician reference
  (correct 1, partially correct 0.5, incorrect 0).
- rubric: the calibration area's rubric judge, one call per criterion, scored
  with HealthBench's example score (``calibration.rubric_score``).

A system's own output that cannot be graded (JSON that breaks the schema, an
empty answer, a free text cut at ``max_tokens``: the client's ``parse_failed``,
cached ones included) is a wrong answer in every track: graded, score 0,
``invalid``, its reason kept; it is not sent to a grader. Only a transport
failure (HTTP errors and timeouts after the client's retries, an endpoint down
past its patience) leaves the item unanswered (``answer_failed``): no score, its
reason kept, and ``answer_failures: score_zero`` scores it 0 instead. A grader
call that fails after the grader stage's ``parse_retries`` and ``max_retries`` is
listed (``grade_failed``) and never becomes a grade.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from mama_pipeline.calibration import RUBRIC_JUDGE_PROMPT, render_conversation, rubric_score
from mama_pipeline.llm.client import LLMRequest, RunReport
from mama_pipeline.store.table_schema import table_schema
from mama_pipeline.systems._systems_prompts import (
    LETTERS,
    SHORT_ANSWER_GRADER_PROMPT,
    SHORT_ANSWER_SCORES,
    extract_letter,
)

GRADED, ANSWER_FAILED, GRADE_FAILED = "graded", "answer_failed", "grade_failed"
PARSE_FAILED = "parse_failed"  # the LLM client's status of an answer it received and could not use
GRADES_SCHEMA = table_schema("system_grades", without=("grader",))
CRITERION_SEP = "#"


def _row(answer: dict[str, Any], item: dict[str, Any], **fields: Any) -> dict[str, Any]:
    base = {k: None for k in GRADES_SCHEMA}
    base.update(
        system=answer["system"],
        item_id=answer["item_id"],
        track=answer["track"],
        pool=item["pool"],
        category=item["category"],
    )
    base.update(fields)
    return base


def _ungradable(answer: dict[str, Any], item: dict[str, Any]) -> dict[str, Any] | None:
    """The row of an answer that is not graded on its content: unanswered, or the system's own broken output."""
    if answer["status"] == "ok":
        return None
    error = f"{answer['status']}: {answer['error']}"
    if answer["status"] == PARSE_FAILED:
        return _row(
            answer,
            item,
            status=GRADED,
            score=0.0,
            correct=False if answer["track"] == "mcq" else None,
            invalid=True,
            grade="invalid",
            error=error,
        )
    return _row(answer, item, status=ANSWER_FAILED, error=error)


def _joined(answers: pl.DataFrame, items: pl.DataFrame, track: str) -> list[tuple[dict, dict, dict]]:
    """(answer row, item row, parsed item) per answer of the track; an answer without its item raises."""
    by_id = {r["item_id"]: r for r in items.iter_rows(named=True)}
    out = []
    for answer in answers.filter(pl.col("track") == track).iter_rows(named=True):
        item = by_id.get(answer["item_id"])
        if item is None:
            raise ValueError(f"answer of {answer['system']!r} names item {answer['item_id']!r}, not in the sample")
        out.append((answer, item, json.loads(item["item_json"])))
    return out


def mcq_grades(answers: pl.DataFrame, items: pl.DataFrame, mcq_output: str) -> list[dict[str, Any]]:
    rows = []
    for answer, item, parsed in _joined(answers, items, "mcq"):
        if (ungradable := _ungradable(answer, item)) is not None:
            rows.append(ungradable)
            continue
        letters = LETTERS[: len(parsed["choices"])]
        given = answer["answer"] if mcq_output == "json_schema" else extract_letter(answer["answer"], letters)
        invalid = given is None or given not in letters
        correct = not invalid and given == letters[parsed["answer_index"]]
        rows.append(
            _row(
                answer,
                item,
                status=GRADED,
                score=float(correct),
                correct=correct,
                invalid=invalid,
                grade="invalid" if invalid else given,
            )
        )
    return rows


def short_answer_requests(answers: pl.DataFrame, items: pl.DataFrame) -> list[LLMRequest]:
    return [
        LLMRequest(
            item_id=answer["item_id"],
            messages=SHORT_ANSWER_GRADER_PROMPT.render(
                question=parsed["question"], reference=parsed["answer"], answer=answer["answer"]
            ),
        )
        for answer, _, parsed in _joined(answers, items, "short_answer")
        if answer["status"] == "ok"
    ]


def short_answer_grades(answers: pl.DataFrame, items: pl.DataFrame, report: RunReport) -> list[dict[str, Any]]:
    results = {r.item_id: r for r in report.results}
    rows = []
    for answer, item, _ in _joined(answers, items, "short_answer"):
        if (ungradable := _ungradable(answer, item)) is not None:
            rows.append(ungradable)
            continue
        res = results[answer["item_id"]]
        common = {"grader_prompt_hash": SHORT_ANSWER_GRADER_PROMPT.hash}
        if not res.ok:
            rows.append(_row(answer, item, status=GRADE_FAILED, error=f"{res.status}: {res.error}", **common))
            continue
        grade = res.value["grade"]
        rows.append(
            _row(
                answer,
                item,
                status=GRADED,
                score=SHORT_ANSWER_SCORES[grade],
                grade=grade,
                grader_reasoning=res.value["reasoning"],
                **common,
            )
        )
    return rows


def _criteria(parsed: dict[str, Any], criteria_text: dict[str, str], item_id: str) -> list[tuple[str, int, str]]:
    out = []
    for ref in parsed.get("rubrics") or []:
        text = criteria_text.get(ref["criterion_id"])
        if text is None:
            raise ValueError(f"rubric item {item_id!r}: criterion {ref['criterion_id']!r} is not in mamabench_criteria")
        out.append((ref["criterion_id"], int(ref["points"]), text))
    if not out:
        raise ValueError(f"rubric item {item_id!r} has no rubric criteria")
    return out


def rubric_requests(answers: pl.DataFrame, items: pl.DataFrame, criteria: pl.DataFrame) -> list[LLMRequest]:
    """One rubric-judge request per (answered item, criterion), with the calibration harness's prompt."""
    text = dict(criteria.select("criterion_id", "criterion").iter_rows())
    requests = []
    for answer, _, parsed in _joined(answers, items, "rubric"):
        if answer["status"] != "ok":
            continue
        conversation = render_conversation(parsed["question"], answer["answer"])
        for i, (_, _, criterion) in enumerate(_criteria(parsed, text, answer["item_id"])):
            requests.append(
                LLMRequest(
                    item_id=f"{answer['item_id']}{CRITERION_SEP}{i}",
                    messages=RUBRIC_JUDGE_PROMPT.render(conversation=conversation, criterion=criterion),
                )
            )
    return requests


def rubric_grades(
    answers: pl.DataFrame, items: pl.DataFrame, criteria: pl.DataFrame, report: RunReport
) -> list[dict[str, Any]]:
    text = dict(criteria.select("criterion_id", "criterion").iter_rows())
    results = {r.item_id: r for r in report.results}
    rows, scorable, per_item = [], [], {}
    for answer, item, parsed in _joined(answers, items, "rubric"):
        if (ungradable := _ungradable(answer, item)) is not None:
            rows.append(ungradable)
            continue
        graded, failed = [], None
        for i, (cid, points, _) in enumerate(_criteria(parsed, text, answer["item_id"])):
            res = results[f"{answer['item_id']}{CRITERION_SEP}{i}"]
            if not res.ok:
                failed = failed or f"criterion {cid}: {res.status}: {res.error}"
                continue
            graded.append(
                {
                    "criterion_id": cid,
                    "points": points,
                    "criteria_met": res.value["criteria_met"],
                    "explanation": res.value["explanation"],
                }
            )
        common = {"grader_prompt_hash": RUBRIC_JUDGE_PROMPT.hash, "criteria": json.dumps(graded, ensure_ascii=False)}
        if failed:
            rows.append(_row(answer, item, status=GRADE_FAILED, error=failed, **common))
            continue
        per_item[answer["item_id"]] = _row(answer, item, status=GRADED, **common)
        scorable += [
            {"example_id": answer["item_id"], "points": g["points"], "criteria_met": g["criteria_met"]} for g in graded
        ]
    if scorable:
        examples = rubric_score(
            pl.DataFrame(scorable, schema={"example_id": pl.String, "points": pl.Int64, "criteria_met": pl.Boolean})
        ).examples
        for example_id, achieved, possible, score in examples.iter_rows():
            per_item[example_id].update(
                score=float(score),
                achieved_points=float(achieved),
                possible_points=float(possible),
                grade=f"{achieved}/{possible}",
            )
    return rows + list(per_item.values())


def grades_frame(rows: list[dict[str, Any]], answer_failures: str) -> pl.DataFrame:
    """The grade rows, ordered by item; ``score_zero`` scores unanswered items 0 (mcq: wrong)."""
    frame = pl.DataFrame(rows, schema=GRADES_SCHEMA)
    if answer_failures == "score_zero":
        failed = pl.col("status") == ANSWER_FAILED
        frame = frame.with_columns(
            pl.when(failed).then(0.0).otherwise(pl.col("score")).alias("score"),
            pl.when(failed & (pl.col("track") == "mcq")).then(False).otherwise(pl.col("correct")).alias("correct"),
        )
    return frame.sort("track", "item_id")
