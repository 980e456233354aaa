"""The track's static HTML page: scoreboard, per-tier headline, paired tests, how the questions were built."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_file
from mama_pipeline.common.html_page import number, page, table
from mama_pipeline.multipassage.candidates import drop_counts
from mama_pipeline.multipassage.questions import status_counts

PAGE = "index.html"
TITLE = "mamaretrieval multi-passage track"


def html_table(df: pl.DataFrame, caption: str, bold: pl.Series | None = None) -> str:
    return table(df, caption, bold, empty=f"{caption}: none.")


def render(
    board: pl.DataFrame,
    significance: pl.DataFrame,
    candidates: pl.DataFrame,
    decisions: pl.DataFrame,
    headline: str,
    alpha: float,
) -> str:
    """The page's HTML."""
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
    for track, caption in ((True, "Track measures (all questions)"), (False, "Single-chunk headline measures")):
        part = overall.filter(pl.col("track") == track)
        wide = part.pivot(on="measure", index="retriever", values="mean", maintain_order=True) if part.height else part
        parts.append(html_table(wide, caption))
    tiers = board.filter((pl.col("tier") != "all") & (pl.col("measure") == headline))
    parts.append(html_table(tiers.select("tier", "retriever", "mean", "n_queries"), f"{headline} per tier"))
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
    return page(TITLE, parts, headline_figures(board, headline))


def headline_figures(board: pl.DataFrame, headline: str) -> list[tuple[str, str]]:
    """The verified questions, and the headline measure per retriever over all of them."""
    overall = board.filter(pl.col("tier") == "all") if board.height else board
    n_questions = int(overall["n_queries"].max() or 0) if overall.height else 0
    rows = overall.filter(pl.col("measure") == headline).sort("retriever") if overall.height else overall
    return [("verified questions", f"{n_questions} (each needs two or three chunks)")] + [
        (f"{r['retriever']}: {headline}", f"{number(r['mean'])} over {r['n_queries']} questions")
        for r in rows.iter_rows(named=True)
    ]


def write_track_report(
    board: pl.DataFrame,
    significance: pl.DataFrame,
    candidates: pl.DataFrame,
    decisions: pl.DataFrame,
    headline: str,
    alpha: float,
    out_dir: Path,
) -> Path:
    path = Path(out_dir) / PAGE
    with atomic_file(path) as fh:
        fh.write(render(board, significance, candidates, decisions, headline, alpha))
    return path
