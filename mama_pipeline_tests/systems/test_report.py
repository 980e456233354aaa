"""The systems report: deterministic bytes, per-item files, error bars and deltas."""

from __future__ import annotations

import json

import polars as pl

from mama_pipeline.systems._answering import ANSWERS_SCHEMA
from mama_pipeline.systems._comparisons import compare_systems
from mama_pipeline.systems._grading import GRADES_SCHEMA
from mama_pipeline.systems._systems_page import SystemsReport, headline_figures, no_rubric_grade_note, write_report
from mama_pipeline.systems._systems_scoreboard import scoreboard
from mama_pipeline_tests.systems.fixtures import harness_frame


def frames():
    answers, grades = [], []
    for system, chunks in (("closed", []), ("rag", ["c1", "c2"])):
        for i in range(6):
            item = f"m{i}"
            score = float((i + (system == "rag")) % 2)
            answers.append((system, item, "mcq", "ok", "A", "A", chunks, "p", "h", f"k{i}", None))
            grades.append(
                {
                    **{k: None for k in GRADES_SCHEMA},
                    "system": system,
                    "item_id": item,
                    "track": "mcq",
                    "pool": "medqa_usmle",
                    "category": "MATERNAL" if i < 3 else "NEONATAL",
                    "status": "graded",
                    "score": score,
                    "correct": score == 1.0,
                    "invalid": False,
                    "grade": "A",
                }
            )
    return (
        pl.DataFrame(answers, schema=ANSWERS_SCHEMA, orient="row"),
        pl.DataFrame(grades, schema=GRADES_SCHEMA).with_columns(pl.lit(None, pl.String).alias("grader")),
    )


def test_report_is_byte_identical_and_lists_items(tmp_path):
    answers, grades = frames()
    board = scoreboard(grades, harness_frame(), 300, 0, 0.95)
    comparisons = compare_systems(grades, {"rag": "closed"}, 300, 0, 0.95)
    report = SystemsReport(
        board=board,
        comparisons=comparisons,
        grades=grades,
        answers=answers,
        systems=[{"system": "closed", "mode": "closed_book"}, {"system": "rag", "mode": "rag"}],
        grader={"rubric": "fake"},
        harness=harness_frame(),
        notes=["a note"],
    )
    first = write_report(report, tmp_path / "a")
    second = write_report(report, tmp_path / "b")
    files = sorted(p.relative_to(first.parent) for p in first.parent.rglob("*") if p.is_file())
    assert [str(p) for p in files] == [
        "deltas.pdf",
        "deltas.png",
        "deltas.svg",
        "items/closed.jsonl",
        "items/rag.jsonl",
        "scores_mcq.pdf",
        "scores_mcq.png",
        "scores_mcq.svg",
        "systems.html",
        *[
            f"{t}.{ext}"
            for t in ("systems_comparisons", "systems_grader_agreement", "systems_mcq")
            for ext in ("csv", "tex")
        ],
    ]  # every figure also as SVG and PDF, every table as LaTeX and CSV
    for rel in files:
        assert (first.parent / rel).read_bytes() == (second.parent / rel).read_bytes(), rel
    rows = [json.loads(x) for x in (first.parent / "items" / "rag.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["chunk_ids"] == ["c1", "c2"] and rows[0]["item_id"] == "m0"
    html = first.read_text()
    assert "Closed-book vs RAG" in html and "<td>MATERNAL</td>" in html and "a note" in html
    assert "Rubric grader vs physicians" in html and "physicians" in html


def test_a_rubric_item_scored_without_grading_says_so_in_the_headline_and_the_grader_note():
    """An invalid rubric answer scores 0 without reaching the grader: the headline counts it and says it was not
    graded, and the grader note says the grader graded nothing, naming that answer (the two agree)."""
    answers, _ = frames()
    row = {k: None for k in GRADES_SCHEMA} | {
        "system": "closed",
        "item_id": "r1",
        "track": "rubric",
        "pool": "p",
        "category": "MATERNAL",
    }
    grades = pl.DataFrame(
        [row | {"status": "graded", "score": 0.0, "invalid": True, "grade": "invalid"}], schema=GRADES_SCHEMA
    ).with_columns(pl.lit(None, pl.String).alias("grader"))
    board = scoreboard(grades, harness_frame(), 300, 0, 0.95)
    report = SystemsReport(
        board=board,
        comparisons=compare_systems(grades, {}, 300, 0, 0.95),
        grades=grades,
        answers=answers,
        systems=[{"system": "closed", "mode": "closed_book"}],
        grader={"rubric": "fake"},
    )
    [(_, figure)] = headline_figures(report)
    assert figure.startswith("0.000") and figure.endswith("over 1 of 1 item (1 invalid answer scored 0, not graded)")
    note = no_rubric_grade_note(grades)
    assert note == (
        "The rubric grader graded no answer; of 1 rubric item: 1 invalid answer scored 0 without grading. "
        "The calibration harness's grader is not compared."
    )
