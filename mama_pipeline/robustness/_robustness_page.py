"""The robustness page of the report: drop per retriever and kind (plot and tables), both sides' Judged@k."""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.html_page import Refusals, esc, interval, page, plural
from mama_pipeline.common.html_page import table as _table
from mama_pipeline.common.manuscript_export import ExportTable, save_figure, write_tables
from mama_pipeline.evaluation import label_of

PAGE = "index.html"
TITLE = "mamaretrieval robustness track"
PLOT = "drop_by_retriever_and_kind.png"


def write_page(
    folder: Path,
    board: pl.DataFrame,
    decisions: pl.DataFrame,
    holes: pl.DataFrame,
    headline: str,
    judged: str,
    tolerance: float,
    alpha: float,
    banners: list[str],
    names: dict[str, str],
) -> Path:
    """Write ``index.html``, its plot (PNG, SVG, PDF) and its tables as LaTeX and CSV into ``folder`` (replaced
    atomically); ``names``: measure name -> the paper's label; returns the page path."""
    board = board.with_columns(pl.col("measure").map_elements(lambda m: label_of(m, names), pl.String))
    headline, judged = label_of(headline, names), label_of(judged, names)
    with atomic_folder(folder) as tmp:
        _plot(board.filter((pl.col("tier") == "all") & (pl.col("measure") == headline)), headline, tmp / PLOT)
        (tmp / PAGE).write_text(
            _page(board, decisions, holes, headline, judged, tolerance, alpha, banners, tmp), encoding="utf-8"
        )
    return folder / PAGE


def headline_figures(board: pl.DataFrame, headline: str, refusals: Refusals | None = None) -> list[tuple[str, str]]:
    """The largest drop in the headline measure per kind (all tiers), over the parents that have a variant, with
    its interval or the mark of why it is refused (``refusals``: the page's)."""
    refusals = Refusals() if refusals is None else refusals
    rows = board.filter((pl.col("tier") == "all") & (pl.col("measure") == headline) & pl.col("drop").is_not_null())
    worst = (
        rows.sort(["kind", "drop", "retriever"], descending=[False, True, False])
        .group_by("kind", maintain_order=True)
        .first()
    )
    return [
        (
            f"{r['kind']}: largest drop in {headline}" + (" (95% CI)" if r["ci_low"] is not None else ""),
            (
                refusals.figure(r["drop"], r["refused"])
                if r["ci_low"] is None and r["refused"]
                else interval(r["drop"], r["ci_low"], r["ci_high"])
            )
            + f" ({r['retriever']}, {plural(r['n_queries'], 'query')})",
        )
        for r in worst.iter_rows(named=True)
    ]


def _plot(rows: pl.DataFrame, headline: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    retrievers = sorted(rows.get_column("retriever").unique().to_list())
    kinds = sorted(rows.get_column("kind").unique().to_list())
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(retrievers) + 2), 4))
    width = 0.8 / max(len(kinds), 1)
    x = np.arange(len(retrievers))
    for i, kind in enumerate(kinds):
        sub = {r["retriever"]: r for r in rows.filter(pl.col("kind") == kind).iter_rows(named=True)}
        drops = [sub[r]["drop"] if r in sub else np.nan for r in retrievers]
        low = [
            sub[r]["drop"] - sub[r]["ci_low"] if r in sub and sub[r]["ci_low"] is not None else 0 for r in retrievers
        ]
        high = [
            sub[r]["ci_high"] - sub[r]["drop"] if r in sub and sub[r]["ci_high"] is not None else 0 for r in retrievers
        ]
        ax.bar(x + (i - (len(kinds) - 1) / 2) * width, drops, width, yerr=[low, high], capsize=2, label=kind)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, retrievers)
    ax.set_ylabel(f"drop in {headline} (clean - variant)")
    ax.set_title("Drop per retriever and kind, with 95% paired bootstrap intervals")
    if kinds:
        ax.legend(fontsize=8)
    save_figure(fig, path)


def _page(
    board: pl.DataFrame,
    decisions: pl.DataFrame,
    holes: pl.DataFrame,
    headline: str,
    judged: str,
    tolerance: float,
    alpha: float,
    banners: list[str],
    folder: Path,
) -> str:
    refusals = Refusals()  # the page's: each reason written out once, under the headline or the first table
    headline_rows = headline_figures(board, headline, refusals)
    top = refusals.headline_note()
    overall = (
        board.filter(pl.col("tier") == "all")
        .with_columns(pl.col("p_holm").lt(alpha).alias(f"Holm p < {alpha:g}"))
        .select(
            "kind",
            "retriever",
            "measure",
            "n_queries",
            "clean_mean",
            "variant_mean",
            "drop",
            "ci_low",
            "ci_high",
            "p_randomization",
            "p_holm",
            f"Holm p < {alpha:g}",
            "coverage_differs",
            "refused",
        )
    )
    judged_rows = board.filter((pl.col("tier") == "all") & (pl.col("measure") == headline)).select(
        "kind",
        "retriever",
        "n_queries",
        pl.col("clean_judged").alias(f"clean {judged}"),
        pl.col("clean_ranked").alias("clean rankings"),
        pl.col("variant_judged").alias(f"variant {judged}"),
        pl.col("variant_ranked").alias("variant rankings"),
        "coverage_differs",
    )
    per_tier = board.filter((pl.col("tier") != "all") & (pl.col("measure") == headline)).select(
        "tier",
        "kind",
        "retriever",
        "n_queries",
        "clean_mean",
        "variant_mean",
        "drop",
        "ci_low",
        "ci_high",
        "p_holm",
        "coverage_differs",
        "refused",
    )
    statuses = decisions.group_by("kind", "status").len().sort("kind", "status").rename({"len": "variants"})
    hole_status = holes.group_by("sides", "status").len().sort("sides", "status").rename({"len": "pairs"})
    caption = (
        "mean over the parents that have a variant of the kind (n); 95% paired BCa bootstrap interval of the drop; "
        "p of the paired randomization test, Holm-adjusted across every (kind, retriever) of one measure and tier."
    )
    files = write_tables(
        folder,
        [
            ExportTable("robustness_drops", overall, f"Robustness track, drop (clean - variant): {caption}"),
            ExportTable("robustness_per_tier", per_tier, f"Robustness track per tier, drop in {headline}: {caption}"),
        ],
    )
    note = "For a manuscript: " + ", ".join(f"<a href='{esc(f)}'>{esc(f)}</a>" for f in files)
    note += f"; the plot also as <a href='{esc(PLOT[:-4])}.svg'>SVG</a> and <a href='{esc(PLOT[:-4])}.pdf'>PDF</a>."
    return page(
        TITLE,
        [
            f"""<p>Each variant is scored against the labels of its parent's information need (inherited pairs plus judged holes:
unlabelled chunks of the clean and of the variant top-k, judged alike).
Drop = clean - variant, averaged over the parents that have a variant of the kind; interval: paired bootstrap (BCa);
p: paired randomization test, Holm-adjusted across every (kind, retriever) of one measure and tier.
<strong>coverage differs</strong>: the clean and the variant mean {html.escape(judged)} differ by more than
{tolerance:g}, so unjudged chunks (scored non-relevant) weigh on one side more than the other; read that drop
with care.</p>
<h2>Drop in {html.escape(headline)} per retriever and kind</h2><img src="{PLOT}" alt="drop per retriever and kind">
<h2>Drops on the headline measures (all tiers)</h2>{_table(overall, refusals=refusals)}
<h2>{html.escape(judged)}, clean and variant (label coverage of each top-k, mean over the non-empty rankings)</h2>
{_table(judged_rows)}
<h2>Per tier: {html.escape(headline)}</h2>{_table(per_tier, refusals=refusals)}
<h2>Variants made, per kind and decision</h2>{_table(statuses)}
<h2>Hole pairs (in the clean top-k, the variants' or both)</h2>{_table(hole_status)}
<p class="note">{note}</p>"""
        ],
        headline_rows,
        banners=banners,
        headline_note=top,
        heading="Robustness track: noisy, abbreviated, telegraphic and code-switched queries",
    )
