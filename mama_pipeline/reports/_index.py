"""The registry of report pages and the index page that links them (``data/reports/index.html``).

A page is one :class:`ReportPage` entry: its name, where it lies under ``data/reports`` (a glob: one benchmark
per folder is several pages), the asset that writes it, and how its headline figures are read (by default from
the table at the top of the page). A new page, such as a leaderboard, is one more entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mama_pipeline.common.html_page import MARK, Refusals, banners_of, esc, headline_of, headline_refusals_of, page
from mama_pipeline.common.input_errors import read_text
from mama_pipeline.llm.embedded_banner import SMOKE_TEST, smoke_test_summary

INDEX = "index.html"
TITLE = "mama_pipeline reports"
Figures = list[tuple[str, str]]


def figures_on_page(page_path: Path) -> Figures:
    """The headline figures the page shows at its top; none when it shows none."""
    return headline_of(read_text(page_path, "report page"))


@dataclass(frozen=True)
class ReportPage:
    name: str
    pattern: str  # under data/reports
    written_by: str  # the asset that writes the page
    headline: Callable[[Path], Figures] = figures_on_page


PAGES: tuple[ReportPage, ...] = (
    ReportPage("Retrieval evaluation (mamaretrieval)", "evaluation/scoreboard.html", "evaluation_report"),
    ReportPage("BEIR benchmarks", "beir-*/scoreboard.html", "beir_scoreboard"),
    ReportPage("Multi-passage track", "multipassage/index.html", "multipassage_report"),
    ReportPage("Robustness track", "robustness/index.html", "robustness_scoreboard"),
    ReportPage("Answering systems (mamabench)", "systems/systems.html", "systems_report"),
    ReportPage("Clinician validation", "clinician/agreement.html", "clinician_report"),
    ReportPage("Leaderboard (mamaretrieval)", "leaderboard/mamaretrieval.html", "mamaretrieval_leaderboard"),
    ReportPage("Leaderboard (mamabench)", "leaderboard/mamabench.html", "mamabench_leaderboard"),
)


def index_entries(reports: Path, pages: tuple[ReportPage, ...] = PAGES) -> list[tuple[ReportPage, Path | None]]:
    """(entry, page path relative to ``reports``) per page found, in registry order; (entry, None) for an entry
    with no page yet."""
    out: list[tuple[ReportPage, Path | None]] = []
    for entry in pages:
        found = sorted(reports.glob(entry.pattern))
        out += [(entry, p.relative_to(reports)) for p in found] or [(entry, None)]
    return out


def render_index(reports: Path, pages: tuple[ReportPage, ...] = PAGES) -> str:
    """The index page's HTML: one section per page, linked, with its headline figures."""
    entries = index_entries(reports, pages)
    written = sum(1 for _, p in entries if p is not None)
    pages_word = "report page" if written == 1 else "report pages"
    body = [f"<p class='note'>{written} {pages_word} written; each links below with its headline figures.</p>"]
    banners: dict[str, list[str]] = {}
    smoke: dict[str, list[str]] = {}
    refusals = Refusals()  # the pages' refusal notes, each reason once for the whole index
    for entry, rel in entries:
        if rel is None:
            body.append(
                f"<h2>{esc(entry.name)}</h2><p class='note'>Not written yet (asset "
                f"<code>{esc(entry.written_by)}</code> has not been materialised).</p>"
            )
            continue
        name = entry.name if "*" not in entry.pattern else f"{entry.name}: {rel.parent.name}"
        text = read_text(reports / rel, "report page")
        figures = _renumbered(entry.headline(reports / rel), headline_refusals_of(text), refusals)
        for banner in banners_of(text):
            if banner.startswith(SMOKE_TEST):  # one banner for all the pages' smoke tests
                smoke.setdefault(name, []).append(banner)
            else:
                banners.setdefault(banner, []).append(name)
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in figures)
        body.append(
            f"<h2><a href='{esc(rel.as_posix())}'>{esc(name)}</a></h2>"
            + (f"<table class='facts'>{rows}</table>" if rows else "<p class='note'>No headline figures recorded.</p>")
        )
    body.append(refusals.note(unit="headline figure"))
    shown = [smoke_test_summary(smoke)] if smoke else []
    shown += [f"{banner} (on: {', '.join(names)})" for banner, names in banners.items()]
    return page(TITLE, body, banners=shown, index_link=None)


def _renumbered(figures: Figures, marks: dict[str, tuple[str, str]], refusals: Refusals) -> Figures:
    """A page's headline figures with its refusal marks (mark -> (what, reason)) replaced by the index's own."""

    def mark(hit) -> str:
        if hit.group(0) not in marks:
            return hit.group(0)
        what, reason = marks[hit.group(0)]
        return refusals.mark(reason, what)

    return [(k, MARK.sub(mark, v)) for k, v in figures]
