"""The report's segment section: per-dimension tables, paired tests per segment, and one plot.

Output is deterministic (fixed order and number formats, figures without a timestamp),
like the rest of the report. The bars (:func:`interval_bars`) are drawn the same way on the page's per-tier
and per-source figures.
"""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from mama_pipeline.common.html_page import Refusals, interval, signed
from mama_pipeline.evaluation._segments import SegmentResult
from mama_pipeline.evaluation._significance import MIN_INTERVAL_N

FIGURE = "segments.png"


def headline_of(result: SegmentResult, headline: str) -> str:
    return headline if headline in result.measures else result.measures[0]


def segments_html(
    result: SegmentResult, headline: str, alpha: float, figure: str | None, refusals: Refusals | None = None
) -> str:
    """The per-segment tables and paired tests; ``refusals``: the page's refusal marks (a refused test's reason is
    written out once per page)."""
    refusals = Refusals() if refusals is None else refusals
    measure = headline_of(result, headline)
    board = result.board
    if board.height == 0:
        return ""
    label = board.filter(pl.col("measure") == measure)["label"][0]
    resampled = f"{result.resamples} resamples; " if result.resamples else ""
    out = [
        "<h2>Results by segment</h2>",
        f"<p class='note'>{_e(label)} per segment (query counts beside each), each mean with its bootstrap "
        f"interval (queries resampled) where the segment has at least {MIN_INTERVAL_N} queries whose values "
        "differ (none otherwise: the n or the equal values say why); paired tests as in the "
        f"significance matrix ({resampled}Holm across the pairs of one segment) "
        f"only where a segment has at least "
        f"{result.min_queries} queries. Every measure per segment is in the segment scoreboard table.</p>",
    ]
    if figure:
        out.append(f"<img src='{figure}' alt='{_e(label)} by segment'>")
    retrievers = board["retriever"].unique(maintain_order=True).to_list()
    for dim in board["dimension"].unique(maintain_order=True).to_list():
        rows = board.filter((pl.col("dimension") == dim) & (pl.col("measure") == measure))
        head = "<tr><th>segment</th><th>queries</th>" + "".join(f"<th>{_e(r)}</th>" for r in retrievers) + "</tr>"
        body = []
        for (segment,), group in rows.group_by("segment", maintain_order=True):
            cells = {
                r["retriever"]: interval(r["mean"], r["ci_low"], r["ci_high"]) for r in group.iter_rows(named=True)
            }
            body.append(
                f"<tr><td>{_e(segment)}</td><td>{group['n_queries'][0]}</td>"
                + "".join(f"<td>{cells.get(r, 'no queries')}</td>" for r in retrievers)
                + "</tr>"
            )
        out.append(f"<h3>By {_e(dim)}</h3><table>{head}{''.join(body)}</table>")
        out.append(_tests(result, dim, measure, alpha, refusals))
        out.append(_all_measures(board.filter(pl.col("dimension") == dim), retrievers))
    return "\n".join(out)


def _tests(result: SegmentResult, dim: str, measure: str, alpha: float, refusals: Refusals) -> str:
    sig = result.significance.filter((pl.col("dimension") == dim) & (pl.col("measure") == measure))
    if sig.height == 0:
        return f"<p class='note'>No segment of {_e(dim)} has {result.min_queries} queries: no paired tests.</p>"
    rows = []
    for r in sig.iter_rows(named=True):
        mcnemar = "" if r["p_mcnemar_holm"] is None else f"{r['p_mcnemar_holm']:.3g}"
        p = r["p_randomization_holm"]
        cls = " class='sig'" if p is not None and p < alpha else ""
        interval = "" if r["ci_low"] is None else f" [{signed(r['ci_low'])}, {signed(r['ci_high'])}]"
        refused = f"<br><small>{refusals.missing(r['refused'])}</small>" if r.get("refused") else ""
        rows.append(
            f"<tr{cls}><td>{_e(r['segment'])}</td><td>{_e(r['retriever_a'])} &minus; {_e(r['retriever_b'])}"
            f"</td><td>{r['n_queries']}</td><td>{signed(r['diff'])}{interval}{refused}</td>"
            f"<td>{'' if p is None else f'{p:.3g}'}</td><td>{mcnemar}</td></tr>"
        )
    head = (
        "<tr><th>segment</th><th>pair</th><th>queries</th><th>difference [CI]</th><th>p (Holm)</th>"
        "<th>McNemar p (Holm)</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>{refusals.note()}"


def _all_measures(board: pl.DataFrame, retrievers: list[str]) -> str:
    wide = board.pivot(on="retriever", index=["segment", "n_queries", "label"], values="mean", maintain_order=True)
    head = "<tr><th>segment</th><th>queries</th><th>measure</th>" + "".join(f"<th>{_e(r)}</th>" for r in retrievers)
    body = "".join(
        f"<tr><td>{_e(r['segment'])}</td><td>{r['n_queries']}</td><td>{_e(r['label'])}</td>"
        + "".join(f"<td>{r[name]:.3f}</td>" for name in retrievers)
        + "</tr>"
        for r in wide.iter_rows(named=True)
    )
    return f"<details><summary>All segment measures</summary><table>{head}</tr>{body}</table></details>"


def segment_figure(result: SegmentResult, folder: Path, headline: str) -> str | None:
    """One panel per dimension: the headline measure per segment and retriever, each bar with its interval and n
    (:func:`interval_bars`); returns the PNG's file name (SVG and PDF beside it)."""
    if result.board.height == 0:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mama_pipeline.common.manuscript_export import save_figure

    measure = headline_of(result, headline)
    board = result.board.filter(pl.col("measure") == measure)
    dims = board["dimension"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(len(dims), 1, figsize=(9, 3.2 * len(dims)), squeeze=False)
    for ax, dim in zip(axes[:, 0], dims):
        rows = board.filter(pl.col("dimension") == dim)
        interval_bars(
            ax, rows.select("retriever", "segment", "mean", "ci_low", "ci_high", pl.col("n_queries").alias("n"))
        )
        ax.set_title(f"{board['label'][0]} by {dim}", fontsize="medium")
    fig.tight_layout()
    return save_figure(fig, folder / FIGURE)


def interval_bars(ax, stats: pl.DataFrame) -> None:
    """Grouped bars on ``ax`` from ``stats`` (retriever, segment, mean, ci_low, ci_high, n), one group per segment
    in row order, one bar per retriever, each with its interval (when known) and its n written at its foot; a zero
    mean is drawn as a thick line on the axis, a missing one is marked "none"."""
    groups = stats["segment"].unique(maintain_order=True).to_list()
    retrievers = stats["retriever"].unique(maintain_order=True).to_list()
    at = {(r["retriever"], r["segment"]): r for r in stats.iter_rows(named=True)}
    width = 0.8 / max(1, len(retrievers))
    for i, name in enumerate(retrievers):
        xs = [j + i * width for j in range(len(groups))]
        rows = [at.get((name, g)) for g in groups]
        means = [r["mean"] if r else 0.0 for r in rows]
        has_ci = [r is not None and r["ci_low"] is not None for r in rows]
        err = [
            [m - r["ci_low"] if ok else 0.0 for m, r, ok in zip(means, rows, has_ci)],
            [r["ci_high"] - m if ok else 0.0 for m, r, ok in zip(means, rows, has_ci)],
        ]
        bars = ax.bar(xs, means, width, yerr=err if any(has_ci) else None, capsize=2, label=name)
        color = bars.patches[0].get_facecolor() if bars.patches else None
        for x, m, r in zip(xs, means, rows):
            if r is None:
                ax.text(x, 0.02, "none", rotation=90, ha="center", va="bottom", fontsize="x-small", color="#888")
                continue
            if m == 0:
                ax.plot([x - width / 2, x + width / 2], [0, 0], color=color, linewidth=3, solid_capstyle="butt")
            ax.text(x, 0.01, f"n={r['n']}", rotation=90, ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(
        [j + width * (len(retrievers) - 1) / 2 for j in range(len(groups))], groups, rotation=20, fontsize="small"
    )
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize="small", bbox_to_anchor=(1.01, 1), loc="upper left")


def _e(s: str) -> str:
    return html.escape(str(s), quote=True)
