"""The report's segment section: per-dimension tables, paired tests per segment, and one plot.

Output is deterministic (fixed order and number formats, PNG without a timestamp),
like the rest of the report.
"""

from __future__ import annotations

import html
from pathlib import Path

import polars as pl

from mama_pipeline.evaluation.segments import SegmentResult

FIGURE = "segments.png"


def headline_of(result: SegmentResult, headline: str) -> str:
    return headline if headline in result.measures else result.measures[0]


def segments_html(result: SegmentResult, headline: str, alpha: float, figure: str | None) -> str:
    measure = headline_of(result, headline)
    board = result.board
    if board.height == 0:
        return ""
    label = board.filter(pl.col("measure") == measure)["label"][0]
    resampled = f"{result.resamples} resamples; " if result.resamples else ""
    out = [
        "<h2>Results by segment</h2>",
        f"<p class='note'>{_e(label)} per segment (query counts beside each); paired tests as in the "
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
            means = dict(group.select("retriever", "mean").iter_rows())
            body.append(
                f"<tr><td>{_e(segment)}</td><td>{group['n_queries'][0]}</td>"
                + "".join(f"<td>{means[r]:.3f}</td>" for r in retrievers)
                + "</tr>"
            )
        out.append(f"<h3>By {_e(dim)}</h3><table>{head}{''.join(body)}</table>")
        out.append(_tests(result, dim, measure, alpha))
        out.append(_all_measures(board.filter(pl.col("dimension") == dim), retrievers))
    return "\n".join(out)


def _tests(result: SegmentResult, dim: str, measure: str, alpha: float) -> str:
    sig = result.significance.filter((pl.col("dimension") == dim) & (pl.col("measure") == measure))
    if sig.height == 0:
        return f"<p class='note'>No segment of {_e(dim)} has {result.min_queries} queries: no paired tests.</p>"
    rows = []
    for r in sig.iter_rows(named=True):
        mcnemar = "" if r["p_mcnemar_holm"] is None else f"{r['p_mcnemar_holm']:.3g}"
        p = r["p_randomization_holm"]
        cls = " class='sig'" if p is not None and p < alpha else ""
        interval = "" if r["ci_low"] is None else f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        refused = f"<br><small>refused: {_e(r['refused'])}</small>" if r.get("refused") else ""
        rows.append(
            f"<tr{cls}><td>{_e(r['segment'])}</td><td>{_e(r['retriever_a'])} &minus; {_e(r['retriever_b'])}"
            f"</td><td>{r['n_queries']}</td><td>{r['diff']:+.3f}{interval}{refused}</td>"
            f"<td>{'' if p is None else f'{p:.3g}'}</td><td>{mcnemar}</td></tr>"
        )
    head = (
        "<tr><th>segment</th><th>pair</th><th>queries</th><th>difference [CI]</th><th>p (Holm)</th>"
        "<th>McNemar p (Holm)</th></tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


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
    """One panel per dimension: the headline measure per segment and retriever; returns the file name."""
    if result.board.height == 0:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measure = headline_of(result, headline)
    board = result.board.filter(pl.col("measure") == measure)
    dims = board["dimension"].unique(maintain_order=True).to_list()
    retrievers = board["retriever"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(len(dims), 1, figsize=(9, 2.8 * len(dims)), squeeze=False)
    width = 0.8 / len(retrievers)
    for ax, dim in zip(axes[:, 0], dims):
        rows = board.filter(pl.col("dimension") == dim)
        segments = rows.select("segment", "n_queries").unique(maintain_order=True).rows()
        for i, name in enumerate(retrievers):
            means = dict(rows.filter(pl.col("retriever") == name).select("segment", "mean").iter_rows())
            ax.bar([j + i * width for j in range(len(segments))], [means[s] for s, _ in segments], width, label=name)
        ax.set_xticks(
            [j + width * (len(retrievers) - 1) / 2 for j in range(len(segments))],
            [f"{s}\n(n={n})" for s, n in segments],
            fontsize="small",
        )
        ax.set_ylim(0, 1)
        ax.set_title(f"{board['label'][0]} by {dim}", fontsize="medium")
    axes[0][0].legend(fontsize="small", bbox_to_anchor=(1.01, 1), loc="upper left")
    fig.tight_layout()
    fig.savefig(folder / FIGURE, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return FIGURE


def _e(s: str) -> str:
    return html.escape(str(s), quote=True)
