"""The track's static HTML page: scoreboard, per-tier headline, paired tests, how the questions were built."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.html_page import Refusals, esc, interval, page, plural, table
from mama_pipeline.common.manuscript_export import ExportTable, write_tables
from mama_pipeline.evaluation import label_of
from mama_pipeline.multipassage._candidates import drop_counts
from mama_pipeline.multipassage._questions import status_counts

PAGE = "index.html"
TITLE = "mamaretrieval multi-passage track"


@dataclass(frozen=True)
class TrackStats:
    """The per-question values and the bootstrap settings of the headline measure's intervals."""

    per_query: pl.DataFrame  # retriever, query_id, measure, value
    resamples: int
    seed: int
    confidence: float = 0.95

    def interval(self, retriever: str, measure: str) -> tuple[float | None, float | None, str | None]:
        """(low, high, why refused) of the bootstrap interval over the questions in id order."""
        from mama_pipeline.evaluation import StatisticRefused, bootstrap_mean_ci

        values = self.per_query.filter((pl.col("retriever") == retriever) & (pl.col("measure") == measure))
        if values.height == 0:
            return None, None, None
        values = values.sort("query_id")  # the declared order: question id, as the per-query files
        try:
            low, high = bootstrap_mean_ci(values["value"].to_numpy(), self.resamples, self.seed, self.confidence)
        except StatisticRefused as refused:
            return None, None, refused.reason
        return low, high, None


def html_table(df: pl.DataFrame, caption: str, bold: pl.Series | None = None, refusals: Refusals | None = None) -> str:
    return table(df, caption, bold, empty=f"{caption}: none.", refusals=refusals)


def render(
    board: pl.DataFrame,
    significance: pl.DataFrame,
    candidates: pl.DataFrame,
    decisions: pl.DataFrame,
    headline: str,
    alpha: float,
    stats: TrackStats | None = None,
    names: dict[str, str] | None = None,
    banners: list[str] | None = None,
    folder: Path | None = None,
) -> str:
    """The page's HTML (``names``: measure name -> the paper's label; ``folder``: where the LaTeX and CSV tables
    go)."""
    names = names or {}
    board = board.with_columns(pl.col("measure").map_elements(lambda m: label_of(m, names), pl.String))
    significance = significance.with_columns(pl.col("measure").map_elements(lambda m: label_of(m, names), pl.String))
    measure_of = {label_of(m, names): m for m in [headline]}
    headline = label_of(headline, names)
    refusals = Refusals()  # the page's: each reason written out once, under the headline or the first table
    top_figures = headline_figures(board, headline, stats, measure_of, refusals)
    top = refusals.headline_note()
    parts = []
    n_questions = int(board.filter(pl.col("tier") == "all")["n_queries"].max() or 0) if board.height else 0
    parts.append(
        f"<p>{n_questions} verified questions, each needing two or three chunks, with the facts a "
        "complete answer needs (its required pieces); every pooled chunk the judge found stating a fact is "
        "relevant to that fact. alpha-nDCG@k: one subtopic per fact (ndeval), a chunk repeating a fact "
        "ranked higher gains (1 - alpha) per repeat; R@k[pieces]: share of the facts stated in the top k; "
        "AllIn@k[pieces]: share of questions with every fact stated in the top k. Headline single-chunk "
        "measures run on the judge's relevance labels with the chunks of each set counted relevant.</p>"
    )
    overall = board.filter(pl.col("tier") == "all")
    exports = []
    for track, caption, stem in (
        (True, "Track measures (all questions)", "multipassage_track_measures"),
        (False, "Single-chunk headline measures", "multipassage_single_chunk"),
    ):
        part = overall.filter(pl.col("track") == track)
        wide = part.pivot(on="measure", index="retriever", values="mean", maintain_order=True) if part.height else part
        parts.append(html_table(wide, caption))
        if wide.height:
            exports.append(
                ExportTable(
                    stem,
                    wide,
                    f"Multi-passage track, {caption.lower()}: mean over "
                    f"{plural(n_questions, 'question')}; no interval, no test.",
                )
            )
    if stats is not None:
        rows = []
        for r in overall.filter(pl.col("measure") == headline).sort("retriever").iter_rows(named=True):
            low, high, why = stats.interval(r["retriever"], measure_of[headline])
            rows.append(
                {
                    "retriever": r["retriever"],
                    "mean": r["mean"],
                    "ci_low": low,
                    "ci_high": high,
                    "n_queries": r["n_queries"],
                    "refused": why or "",
                }
            )
        if rows:
            cis = pl.DataFrame(rows)
            caption = (
                f"{headline}: mean over the questions with its {stats.confidence:.0%} BCa bootstrap interval "
                f"(questions resampled, {stats.resamples} resamples)"
            )
            parts.append(table(cis.rename({"n_queries": "questions"}), caption, refusals=refusals))
            exports.append(ExportTable("multipassage_headline", cis, f"Multi-passage track, {caption}."))
    tiers = board.filter((pl.col("tier") != "all") & (pl.col("measure") == headline))
    tier_rows = tiers.select("tier", "retriever", "mean", pl.col("n_queries").alias("questions"))
    parts.append(html_table(tier_rows, f"{headline} per tier"))
    sig = significance.select(
        "tier",
        "measure",
        "retriever_a",
        "retriever_b",
        "n_queries",
        "diff",
        "ci_low",
        "ci_high",
        "p_randomization_holm",
        "p_mcnemar_holm",
        "refused",
    )
    parts.append(
        html_table(
            sig,
            f"Paired tests (Holm-adjusted p; bold: below {alpha})",
            (sig["p_randomization_holm"] < alpha) if sig.height else None,
            refusals,
        )
    )
    if sig.height:
        exports.append(
            ExportTable(
                "multipassage_paired_tests",
                sig,
                "Multi-passage track, paired differences (first - second retriever) over the questions both ranked, "
                "bootstrap interval; p of the paired randomization test (exact McNemar on 0/1 measures), "
                "Holm-adjusted across every pair of retrievers per measure and tier.",
            )
        )
    drops = pl.DataFrame({"reason": list(drop_counts(candidates)), "sets": list(drop_counts(candidates).values())})
    status = candidates.group_by("kind", "size", "status").len("sets").sort("kind", "size", "status")
    parts.append(html_table(status, "Candidate sets by kind, size and status"))
    parts.append(html_table(drops, "Dropped candidate sets by reason"))
    counts = status_counts(decisions)
    parts.append(
        html_table(
            pl.DataFrame({"status": list(counts), "sets": list(counts.values())}),
            "Writing and verification outcomes (only kept questions are released)",
        )
    )
    if folder is not None and exports:
        files = write_tables(folder, exports)
        links = ", ".join(f"<a href='{esc(f)}'>{esc(f)}</a>" for f in files)
        parts.append(f"<p class='note'>For a manuscript: {links}.</p>")
    return page(TITLE, parts, top_figures, banners=banners or (), headline_note=top)


def headline_figures(
    board: pl.DataFrame,
    headline: str,
    stats: TrackStats | None = None,
    measure_of: dict[str, str] | None = None,
    refusals: Refusals | None = None,
) -> list[tuple[str, str]]:
    """The verified questions, and the headline measure per retriever over all of them (with its interval when
    the per-question values are given, or the mark of why it is refused: ``refusals``, the page's)."""
    refusals = Refusals() if refusals is None else refusals
    overall = board.filter(pl.col("tier") == "all") if board.height else board
    n_questions = int(overall["n_queries"].max() or 0) if overall.height else 0
    rows = overall.filter(pl.col("measure") == headline).sort("retriever") if overall.height else overall
    out = [("verified questions", f"{n_questions} (each needs two or three chunks)")]
    for r in rows.iter_rows(named=True):
        low, high, why = (
            stats.interval(r["retriever"], (measure_of or {}).get(headline, headline)) if stats else (None, None, None)
        )
        ci = " (95% CI)" if low is not None else ""
        shown = refusals.figure(r["mean"], why) if why else interval(r["mean"], low, high)
        out.append((f"{r['retriever']}: {headline}{ci}", f"{shown} over {plural(r['n_queries'], 'question')}"))
    return out


def write_track_report(
    board: pl.DataFrame,
    significance: pl.DataFrame,
    candidates: pl.DataFrame,
    decisions: pl.DataFrame,
    headline: str,
    alpha: float,
    out_dir: Path,
    stats: TrackStats | None = None,
    names: dict[str, str] | None = None,
    banners: list[str] | None = None,
) -> Path:
    """Write the page and its LaTeX and CSV tables into ``out_dir`` (replaced atomically)."""
    with atomic_folder(Path(out_dir)) as tmp:
        html = render(board, significance, candidates, decisions, headline, alpha, stats, names, banners, tmp)
        (tmp / PAGE).write_text(html, encoding="utf-8")
    return Path(out_dir) / PAGE
