"""Every report page as a reader sees it, in headless Chromium at 1280 px: nothing wider than the window, no raw
Python value or negative zero in a cell, every measure label one of the shared names, no snake_case id in a
heading, no refusal sentence said twice, a way back to the index, and the smoke-test or synthetic-label banner
where a figure rests on them. Also: each exported LaTeX table compiles in a minimal document."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from mama_pipeline.common.manuscript_export import standalone
from mama_pipeline.evaluation._measure_names import known_labels, measure_names
from mama_pipeline.evaluation._retrieval_page import write_report as write_evaluation
from mama_pipeline.evaluation._scoreboard_measures import beir_plan, mamaretrieval_plan
from mama_pipeline.leaderboard._board import Stats
from mama_pipeline.leaderboard._build import TrackSpec, build_benchmark, facts, measures_of
from mama_pipeline.leaderboard._leaderboard_files import MANUSCRIPT, PAGE_FILE, folder_files
from mama_pipeline.leaderboard._leaderboard_inputs import configured
from mama_pipeline.reports._index import INDEX, render_index
from mama_pipeline_tests.evaluation.test_report import full_inputs
from mama_pipeline_tests.evaluation.test_report_browser import beir_page
from mama_pipeline_tests.headless_browser import evaluate_page, find_chromium
from mama_pipeline_tests.ui.test_reports_index import clinician, multipassage, robustness, systems

WIDTH = 1280
RAW = re.compile(r"^(True|False|None|nan)$|(True|False|None|nan)\b|-0\.0+\b")
READER_FACTS = """JSON.stringify({
  scrollWidth: document.documentElement.scrollWidth,
  wideTables: Array.from(document.querySelectorAll('table'))
                   .filter(t => t.getBoundingClientRect().width > window.innerWidth - 16)
                   .map(t => (t.querySelector('caption, th') || t).innerText.slice(0, 40)),
  innerWidth: window.innerWidth,
  cells: Array.from(document.querySelectorAll('td, th')).map(c => c.innerText),
  texts: Array.from(document.querySelectorAll("th, td, caption, h2, h3, img"))
                 .map(c => c.tagName == 'IMG' ? c.alt : c.innerText),
  headline: Array.from(document.querySelectorAll('#headline th')).map(c => c.innerText),
  headings: Array.from(document.querySelectorAll('h1, h2, h3, h4, caption, th')).map(c => c.innerText),
  text: document.body.innerText,
  back: Array.from(document.querySelectorAll('nav a')).map(a => a.getAttribute('href')),
  banners: Array.from(document.querySelectorAll('.banner')).map(b => b.innerText),
  images: Array.from(document.images).map(i => i.complete && i.naturalWidth > 0),
})"""
SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")  # short_answer, mean_unanswered_as_0: an id, not a word
# a refusal's reason as the statistics and the boards word it (what a page must say once, not per cell)
REFUSAL_SENTENCE = re.compile(
    r"[^.;:\n]*(?:fewer than the \d+|no spread|values equal|degenerate|one side of the mean|judge failed on)[^.;\n]*"
)
# a measure as the scoreboards name it: a family with a cutoff or a relevance cut (HR@5, MRR lenient, nDCG@10)
MEASURE_WORD = re.compile(
    r"\b(HR|MRR|wHR|nDCG|P|R|wP|Judged|Success|RR|AP)(@\d+|\(rel=\d+\)(@\d+)?)(?:\s(lenient|strict))?"
)


def _leaderboard(reports: Path, data: Path) -> list[Path]:
    """Both leaderboards' folders and pages, from per-query values built here (three retrievers, 24 queries)."""
    rng = random.Random(7)
    names = measure_names(mamaretrieval_plan([5, 10], 3, 5))
    measures = ["Success(rel=3)@5", "nDCG@10"]
    judged = {"Success(rel=3)@5": "Judged@5", "nDCG@10": "Judged@10"}
    rows = []
    for retriever, p in (("bm25", 0.7), ("dense", 0.5), ("hybrid", 0.68)):
        for q in range(24):
            rows += [
                (retriever, f"q{q}", "Success(rel=3)@5", float(rng.random() < p)),
                (retriever, f"q{q}", "nDCG@10", round(rng.random() * p, 3)),
                (retriever, f"q{q}", "Judged@5", 1.0),
                (retriever, f"q{q}", "Judged@10", 0.9),
                (retriever, f"q{q}", "AllIn@10[pieces]", float(rng.random() < p / 2)),
            ]
    values = pl.DataFrame(rows, schema=["retriever", "query_id", "measure", "value"], orient="row")
    labels = {m: names.get(m, m) for m in [*measures, *judged.values()]}
    specs = {
        "main": TrackSpec(measures, {"Success(rel=3)@5"}, judged, labels),
        "robustness": TrackSpec(measures, {"Success(rel=3)@5"}, judged, labels),
        "multipassage": TrackSpec(["AllIn@10[pieces]"], {"AllIn@10[pieces]"}),
    }
    inputs = {
        "main": configured(values, "retriever"),
        "robustness": configured(values, "retriever", {"hybrid": "judge failed on 5 of 9 holes (bound 5%)"}),
        "multipassage": configured(values.filter(pl.col("measure") == "AllIn@10[pieces]"), "retriever"),
    }
    stats = Stats(300, 0, 0.95, 0.05)
    board = build_benchmark("mamaretrieval", inputs, specs, stats, None)
    doc_facts = facts("mamaretrieval", stats, None, specs) | {"banners": ["Smoke test: the judge ran embedded."]}
    files = folder_files(
        "mamaretrieval", measures_of(specs), board.entries, board.comparisons, board.per_query, doc_facts
    )
    folder = data / "leaderboard" / "mamaretrieval"
    for rel, content in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(content)
    page = reports / "leaderboard" / "mamaretrieval.html"
    (page.parent / MANUSCRIPT).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / PAGE_FILE, page)
    for rel in files:
        if rel.startswith(f"{MANUSCRIPT}/"):
            shutil.copyfile(folder / rel, page.parent / rel)
    return [page, *sorted((folder / MANUSCRIPT).glob("*.tex"))]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> tuple[Path, list[Path], frozenset[str], list[Path]]:
    """Every page of the reports index (written from the same fixtures as the index test), the shared measure
    labels, and every exported LaTeX table."""
    from mama_pipeline_tests.evaluation.test_report import graded as graded_fixture

    root = tmp_path_factory.mktemp("reader")
    reports = root / "reports"
    pages = [
        write_evaluation(full_inputs(graded_fixture.__wrapped__()), reports / "evaluation"),
        beir_page(reports / "beir-miriad"),
        multipassage(reports / "multipassage"),
        robustness(reports / "robustness"),
        systems(reports / "systems"),
        clinician(reports / "clinician"),
    ]
    board_page, *board_tex = _leaderboard(reports, root / "data")
    pages.append(board_page)
    (reports / INDEX).write_text(render_index(reports), encoding="utf-8")
    labels = known_labels(measure_names(mamaretrieval_plan([1, 3, 5, 10], 3, 5, 6)))
    labels |= known_labels(measure_names(beir_plan([1, 3, 5, 10])))  # the BEIR pages' one unnamed cut
    tex = sorted(reports.rglob("*.tex")) + board_tex
    return reports, [reports / INDEX, *pages], labels | {"AllIn@10[pieces]"}, tex


def test_every_page_fits_1280px_and_reads_as_a_reader_reads_it(reports):
    root, pages, labels, _ = reports
    chromium = find_chromium()
    problems = []
    for path in pages:
        facts, errors = evaluate_page(path, chromium, READER_FACTS, width=WIDTH)
        name = path.relative_to(root).as_posix()
        assert errors == [], (name, errors)
        assert all(facts["images"]), (name, "an image did not load")
        if facts["scrollWidth"] > facts["innerWidth"]:
            problems.append(f"{name}: {facts['scrollWidth']} px wide in a {facts['innerWidth']} px window")
        if facts["wideTables"]:
            problems.append(f"{name}: tables wider than the window {facts['wideTables']}")
        raw = sorted({c for c in facts["cells"] if RAW.search(c)})
        if raw:
            problems.append(f"{name}: cells with raw values {raw[:5]}")
        for text in facts["texts"] + facts["headline"]:
            for hit in MEASURE_WORD.finditer(text):
                if hit.group(0) not in labels:
                    problems.append(f"{name}: measure {hit.group(0)!r} (in {text!r}) is not a shared label")
        snake = sorted({w for h in facts["headings"] for w in SNAKE.findall(h)} - {"mama_pipeline"})  # its name
        if snake:
            problems.append(f"{name}: snake_case ids in headings {snake[:5]}")
        said = [s.strip() for s in REFUSAL_SENTENCE.findall(facts["text"])]
        twice = sorted({s for s in said if said.count(s) > 1})
        if twice:
            problems.append(f"{name}: a refusal sentence said more than once {twice[:3]}")
        if path.name != INDEX:
            if facts["back"] != ["../index.html"] or not (path.parent.parent / INDEX).exists():
                problems.append(f"{name}: no link back to the index ({facts['back']})")
    assert problems == [], "\n".join(problems)


def test_banners_where_a_figure_rests_on_the_embedded_model_or_synthetic_labels(reports):
    root, pages, _, _ = reports
    chromium = find_chromium()
    shown = {}
    for path in pages:
        facts, _errors = evaluate_page(path, chromium, READER_FACTS, width=WIDTH)
        shown[path.relative_to(root).as_posix()] = facts["banners"]
    assert any("SYNTHETIC" in b for b in shown["clinician/agreement.html"])
    assert any("Smoke test" in b for b in shown["robustness/index.html"])
    assert any("Smoke test" in b for b in shown["leaderboard/mamaretrieval.html"])
    assert shown["evaluation/scoreboard.html"] == []  # the fixture's judge is not the embedded model
    # the index repeats each banner once, naming the pages it stands on
    index = shown[INDEX]
    assert any("SYNTHETIC" in b and "Clinician validation" in b for b in index)
    assert any("Smoke test" in b and "Robustness track" in b for b in index)


def test_each_exported_latex_table_compiles_with_booktabs(reports, tmp_path):
    _, _, _, tex = reports
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.fail("pdflatex not found: scripts/test.sh installs Debian's texlive-latex-recommended (booktabs)")
    assert len(tex) >= 10, tex
    for i, path in enumerate(tex):
        body = path.read_text()
        assert "\\toprule" in body and "\\bottomrule" in body, path
        doc = tmp_path / f"t{i}.tex"
        doc.write_text(standalone(body))
        run = subprocess.run(
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", doc.name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0 and (tmp_path / f"t{i}.pdf").stat().st_size > 1000, (path, run.stdout[-2000:])


def test_best_is_bold_and_tied_marked_in_the_exported_leaderboard(reports):
    root, _, _, _ = reports
    tex = (root / "leaderboard" / MANUSCRIPT / "mamaretrieval_main.tex").read_text()
    data = json.loads((root.parent / "data" / "leaderboard" / "mamaretrieval" / "leaderboard.json").read_text())
    main = next(t for t in data["tracks"] if t["track"] == "main")
    standing = {e["name"]: e["figures"][main["headline"]]["standing"] for e in main["entries"]}
    for name, s in standing.items():
        if s == "best":
            assert f"\\textbf{{{name}}}" in tex
        elif s == "tied with best":
            assert f"{name}\\textsuperscript{{\\dag}}" in tex
        else:
            assert f"\\textbf{{{name}}}" not in tex and f"{name}\\textsuperscript" not in tex
    assert data["measure_labels"]["Success(rel=3)@5"] == "HR@5 lenient"
    assert "Holm" in tex and "resamples" in tex  # the caption states the correction and the resampling
