"""The reports index in headless Chromium: every registered page is linked with its headline figures, and each
linked page opens without an error, its images loaded."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from mama_pipeline.clinician._clinician_agreement import CONFUSION_SCHEMA, MAJORITY, METRIC_SCHEMA
from mama_pipeline.clinician._clinician_page import write_report as write_clinician
from mama_pipeline.common.html_page import banners_of, page
from mama_pipeline.evaluation._retrieval_page import write_report as write_evaluation
from mama_pipeline.multipassage._multipassage_page import write_track_report
from mama_pipeline.reports._index import INDEX, PAGES, ReportPage, render_index
from mama_pipeline.robustness._robustness_page import write_page as write_robustness
from mama_pipeline.systems._comparisons import compare_systems
from mama_pipeline.systems._systems_page import SystemsReport
from mama_pipeline.systems._systems_page import write_report as write_systems
from mama_pipeline.systems._systems_scoreboard import scoreboard
from mama_pipeline_tests.evaluation.test_report import full_inputs, graded  # noqa: F401 - fixture
from mama_pipeline_tests.evaluation.test_report_browser import beir_page
from mama_pipeline_tests.headless_browser import check_page, find_chromium
from mama_pipeline_tests.systems.fixtures import harness_frame
from mama_pipeline_tests.systems.test_report import frames


def robustness(folder: Path) -> Path:
    row = {
        "tier": "all",
        "kind": "typo",
        "retriever": "bm25",
        "measure": "nDCG@10",
        "n_queries": 12,
        "clean_mean": 0.61,
        "variant_mean": 0.48,
        "drop": 0.13,
        "ci_low": 0.05,
        "ci_high": 0.2,
        "p_randomization": 0.0004,
        "p_holm": 0.0008,
        "coverage_differs": False,
        "clean_judged": 0.9,
        "clean_ranked": 12,
        "variant_judged": 0.85,
        "variant_ranked": 12,
        "refused": None,  # why an interval or p is missing (robustness_scoreboard.refused)
    }
    board = pl.DataFrame(
        [
            row,
            {**row, "kind": "abbrev", "drop": 0.02, "ci_low": -0.03, "ci_high": 0.07, "p_holm": 0.4},
            {**row, "tier": "high"},
        ],
        schema_overrides={"refused": pl.String},
    )
    return write_robustness(
        folder,
        board,
        pl.DataFrame({"kind": ["typo"], "status": ["kept"]}),
        pl.DataFrame({"sides": ["both"], "status": ["labelled"]}),
        "nDCG@10",
        "Judged@10",
        0.1,
        0.05,
        banners=["Smoke test: the query rewriter ran on the embedded model."],
        names={"nDCG@10": "nDCG@10", "Judged@10": "Judged@10"},
    )


def clinician(folder: Path) -> Path:
    metrics = pl.DataFrame(
        [
            ("relevance", MAJORITY, "exact_score_agreement", 0.625, 16),
            ("relevance", MAJORITY, "lenient_agreement", 0.8125, 16),
        ],
        schema=METRIC_SCHEMA,
        orient="row",
    )
    confusion = pl.DataFrame(
        [("relevance", MAJORITY, "3", "3", 10), ("relevance", MAJORITY, "3", "5", 6)],
        schema=CONFUSION_SCHEMA,
        orient="row",
    )
    validated = pl.DataFrame({"kind": ["relevance"] * 16, "tie": [False] * 16, "synthetic": [True] * 16})
    labels = pl.DataFrame({"source": ["demo"] * 32, "synthetic": [True] * 32})
    return write_clinician(folder, metrics, confusion, validated, labels, 2)


def multipassage(folder: Path) -> Path:
    board = pl.DataFrame(
        {
            "tier": ["all", "all"],
            "retriever": ["bm25", "dense"],
            "measure": ["AllIn@10[pieces]"] * 2,
            "position": [0, 0],
            "track": [True, True],
            "mean": [0.5, 0.25],
            "n_queries": [4, 4],
        }
    )
    sig = pl.DataFrame(
        {
            "tier": ["all"],
            "measure": ["AllIn@10[pieces]"],
            "retriever_a": ["bm25"],
            "retriever_b": ["dense"],
            "n_queries": [4],
            "diff": [0.25],
            "ci_low": [0.0],
            "ci_high": [0.5],
            "p_randomization_holm": [0.2],
            "p_mcnemar_holm": [0.5],
            "refused": pl.Series([None], dtype=pl.String),  # multipassage_significance's refusal reasons
        }
    )
    cands = pl.DataFrame(
        {"kind": ["section"], "size": [2], "status": ["kept"], "drop_reason": [None]},
        schema_overrides={"drop_reason": pl.String},
    )
    return write_track_report(board, sig, cands, pl.DataFrame({"status": ["kept"]}), "AllIn@10[pieces]", 0.05, folder)


def systems(folder: Path) -> Path:
    answers, grades = frames()
    return write_systems(
        SystemsReport(
            board=scoreboard(grades, harness_frame(), 300, 0, 0.95),
            comparisons=compare_systems(grades, {"rag": "closed"}, 300, 0, 0.95),
            grades=grades,
            answers=answers,
            systems=[{"system": "closed", "mode": "closed_book"}, {"system": "rag", "mode": "rag"}],
            grader={"rubric": "fake"},
            harness=harness_frame(),
        ),
        folder,
    )


def test_index_links_every_page_with_its_headline_figures_and_each_opens(tmp_path, graded):  # noqa: F811
    reports = tmp_path / "reports"
    written = [
        write_evaluation(full_inputs(graded), reports / "evaluation"),
        beir_page(reports / "beir-miriad"),
        multipassage(reports / "multipassage"),
        robustness(reports / "robustness"),
        systems(reports / "systems"),
        clinician(reports / "clinician"),
    ]
    assert {w.relative_to(reports).as_posix() for w in written} == {
        p.relative_to(reports).as_posix() for e in PAGES for p in reports.glob(e.pattern)
    }  # every entry has a page
    index = reports / INDEX
    index.write_text(render_index(reports), encoding="utf-8")
    html = index.read_text()
    links = re.findall(r"<h2><a href='([^']+)'>", html)
    assert links == [
        "evaluation/scoreboard.html",
        "beir-miriad/scoreboard.html",
        "multipassage/index.html",
        "robustness/index.html",
        "systems/systems.html",
        "clinician/agreement.html",
    ]
    # headline figures as the writers put them, each with its denominator
    assert "bm25: AllIn@10[pieces]</th><td>0.500 over 4 questions" in html
    assert "verified questions</th><td>4 (each needs two or three chunks)" in html
    assert "typo: largest drop in nDCG@10 (95% CI)</th><td>0.130 [0.050, 0.200] (bm25, 12 queries)" in html
    assert (
        "relevance judge vs SYNTHETIC annotators</th><td>16 validated tasks; exact score agreement 0.625 over 16 pairs"
        in html
    )
    assert re.search(
        r"rag: multiple choice \(accuracy\)</th><td>0\.\d{3} \(no interval[\u00b9\u00b2\u00b3\u2070-\u2079]+\) "
        r"over 6 of 6 items",  # 6 items: the interval is refused, its reason listed once at the foot of the index
        html,
    )
    assert html.count("fewer than the 30 values a bootstrap interval needs") == 1
    assert re.search(r"over \d+ queries", html.split("beir-miriad")[0])  # the mamaretrieval headline
    assert "6 report pages written" in html

    chromium = find_chromium()
    check = check_page(index, chromium)
    assert check.errors == [] and check.title == "mama_pipeline reports"
    for link in links:
        page = check_page(index.parent / link, chromium)
        assert page.errors == [] and page.title and page.text_chars > 200, (link, page)
        assert all(i["loaded"] for i in page.images), (link, page.images)


def test_an_entry_without_a_page_says_so_and_a_new_entry_is_one_line(tmp_path):
    reports = tmp_path / "reports"
    (reports / "leaderboard").mkdir(parents=True)
    (reports / "leaderboard" / "index.html").write_text(page("Leaderboard", [], [("top", "0.9 over 10 queries")]))
    pages = (*PAGES, ReportPage("Leaderboard", "leaderboard/index.html", "leaderboard"))
    html = render_index(reports, pages)
    assert "<a href='leaderboard/index.html'>Leaderboard</a>" in html and "0.9 over 10 queries" in html
    assert html.count("Not written yet") == len(PAGES) and "1 report page written" in html


def test_the_pages_smoke_test_banners_are_one_banner_on_the_index(tmp_path):
    """Each page's smoke-test banner stands once on the index, grouped: the model named once, each page with the
    stages that ran on it; another kind of banner keeps its own line."""
    reports = tmp_path / "reports"
    tail = (
        "Every figure on this page that depends on them exercises the pipeline and says nothing about the quality "
        "of a retriever, a judge or an answering system."
    )
    for folder, stages in (("multipassage", "query writer, relevance judge"), ("robustness", "query rewriter")):
        (reports / folder).mkdir(parents=True)
        banners = [f"Smoke test: the {stages} ran on the embedded tiny-lm model. {tail}"]
        if folder == "robustness":
            banners.append("24 of the 24 labels are SYNTHETIC.")
        (reports / folder / "index.html").write_text(page(folder, [], banners=banners))
    shown = banners_of(render_index(reports))
    assert shown == [
        "Smoke test: on 2 pages figures came from stages that ran on the embedded tiny-lm model: Multi-passage "
        "track: query writer, relevance judge | Robustness track: query rewriter. Every such figure exercises the "
        "pipeline and says nothing about the quality of a retriever, a judge or an answering system.",
        "24 of the 24 labels are SYNTHETIC. (on: Robustness track)",
    ]
