"""Static HTML report: scoreboard, significance matrix and plots (PNG files beside the page).

Output is deterministic: fixed ordering, fixed number formats, PNGs written
without a timestamp or software stamp.
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from mama_pipeline.file_ops import atomic_folder
from mama_pipeline.evaluation.scoring import wide_scoreboard
from mama_pipeline.evaluation.segment_report import segment_figure, segments_html
from mama_pipeline.evaluation.segments import SegmentResult

PAGE = "scoreboard.html"
CSS = """body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;font-size:90%}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.sig{font-weight:bold}.note{color:#555}img{max-width:100%}"""


@dataclass
class ReportInputs:
    """What one report shows; optional parts are left out when absent."""

    title: str
    board: pl.DataFrame  # scoreboard rows (tier column: "all" and per tier)
    significance: pl.DataFrame
    headline: str  # measure name for the significance matrix and the per-tier plot
    notes: list[str] = field(default_factory=list)
    label_counts: pl.DataFrame | None = None  # relevance, count
    label_mix: pl.DataFrame | None = None  # retriever, label, share
    mix_k: int | None = None
    alpha: float = 0.05
    segments: SegmentResult | None = None  # per-segment means and tests (evaluation/segments.py)


def label_mix(run: pl.DataFrame, qrels: pl.DataFrame, k: int) -> pl.DataFrame:
    """Share of each retriever's top-k slots by judged label ("unjudged" when no label)."""
    top = run.sort("retriever", "query_id", "rank").filter(
        pl.int_range(pl.len()).over("retriever", "query_id") < k
    )
    labelled = top.join(qrels, on=["query_id", "doc_id"], how="left").with_columns(
        pl.col("relevance").cast(pl.String).fill_null("unjudged").alias("label")
    )
    return (
        labelled.group_by("retriever", "label").len()
        .with_columns((pl.col("len") / pl.col("len").sum().over("retriever")).alias("share"))
        .select("retriever", "label", "share")
        .sort("retriever", "label")
    )


def write_report(inputs: ReportInputs, folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/scoreboard.html`` and its PNGs (folder replaced atomically); returns the page."""
    folder = Path(folder)
    with atomic_folder(folder) as tmp:
        figures = _figures(inputs, tmp)
        (tmp / PAGE).write_text(_page(inputs, figures), encoding="utf-8")
    return folder / PAGE


def _overall(board: pl.DataFrame) -> pl.DataFrame:
    return board.filter(pl.col("tier") == "all") if "tier" in board.columns else board


def _page(inputs: ReportInputs, figures: dict[str, str]) -> str:
    overall = _overall(inputs.board)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(inputs.title)}</title>",
             f"<style>{CSS}</style></head><body><h1>{_e(inputs.title)}</h1>"]
    parts += [f"<p class='note'>{_e(n)}</p>" for n in inputs.notes]
    parts.append("<h2>Scoreboard</h2><p class='note'>Mean over all benchmark queries; robust measures "
                 "(hit rate, MRR, wHR) lead. A query with no qualifying document scores 0.</p>")
    parts.append(_table(wide_scoreboard(overall)))
    no_rel = (overall.filter(pl.col("queries_no_relevant").is_not_null())
              .group_by("cut", "rel").agg(pl.col("queries_no_relevant").first()).sort("rel", nulls_last=True))
    if no_rel.height:
        items = ", ".join(
            f"{r['cut'] or 'graded'} (label &ge; {r['rel'] if r['rel'] is not None else 1}): {r['queries_no_relevant']}"
            for r in no_rel.iter_rows(named=True)
        )
        parts.append(f"<p>Queries without any qualifying document, of {overall['n_queries'][0]}: {items}.</p>")
    parts.append(_significance_section(inputs))
    for key, caption in (("metric_by_k", "Measures by cutoff k"), ("per_tier", "Per-tier results"),
                         ("score_distribution", "Score distributions")):
        if key in figures:
            parts.append(f"<h2>{caption}</h2><img src='{figures[key]}' alt='{_e(caption)}'>")
    if "tier" in inputs.board.columns and inputs.board["tier"].n_unique() > 1:
        tiers = inputs.board.filter((pl.col("measure") == inputs.headline) & (pl.col("tier") != "all"))
        wide = tiers.pivot(on="tier", index="retriever", values="mean", maintain_order=True)
        parts.append(f"<h3>{_e(_label(inputs.board, inputs.headline))} by tier</h3>" + _table(wide))
    if inputs.segments is not None:
        parts.append(segments_html(inputs.segments, inputs.headline, inputs.alpha, figures.get("segments")))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _significance_section(inputs: ReportInputs) -> str:
    sig = inputs.significance
    if sig.height == 0:
        return "<h2>Paired significance</h2><p>Fewer than two retrievers: nothing to compare.</p>"
    out = ["<h2>Paired significance</h2>",
           "<p class='note'>Cells: mean difference row &minus; column, bootstrap confidence interval, Holm-adjusted "
           f"p of the paired randomization test (bold: p &lt; {inputs.alpha}). For hit rates the exact McNemar "
           "p (Holm) follows.</p>"]
    for measure in sig["measure"].unique(maintain_order=True).to_list():
        rows = sig.filter(pl.col("measure") == measure)
        names = list(dict.fromkeys(rows["retriever_a"].to_list() + rows["retriever_b"].to_list()))
        cells = {(r["retriever_a"], r["retriever_b"]): r for r in rows.iter_rows(named=True)}
        head = "".join(f"<th>{_e(n)}</th>" for n in names)
        body = []
        for a in names:
            tds = []
            for b in names:
                r, sign = (cells.get((a, b)), 1) if (a, b) in cells else (cells.get((b, a)), -1)
                tds.append("<td></td>" if r is None else _cell(r, sign, inputs.alpha))
            body.append(f"<tr><th>{_e(a)}</th>{''.join(tds)}</tr>")
        out.append(f"<h3>{_e(_label(inputs.board, measure))}</h3><table><tr><th></th>{head}</tr>{''.join(body)}</table>")
    return "\n".join(out)


def _cell(r: dict, sign: int, alpha: float) -> str:
    diff = sign * r["diff"]
    low, high = (r["ci_low"], r["ci_high"]) if sign == 1 else (-r["ci_high"], -r["ci_low"])
    p = r["p_randomization_holm"]
    text = f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]<br>p={p:.3g}"
    if r["p_mcnemar_holm"] is not None:
        text += f"<br>McNemar p={r['p_mcnemar_holm']:.3g}"
    return f"<td class='{'sig' if p < alpha else ''}'>{text}</td>"


def _figures(inputs: ReportInputs, folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    overall = _overall(inputs.board)
    retrievers = overall["retriever"].unique(maintain_order=True).to_list()

    series = (overall.filter(pl.col("k").is_not_null() & pl.col("family").is_in(["HR", "nDCG", "P", "wHR", "wP"]))
              .select("family", "cut").unique(maintain_order=True).rows())
    if series:
        ncols = min(4, len(series))
        nrows = -(-len(series) // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
        for ax in axes.flat[len(series):]:
            ax.set_visible(False)
        for ax, (family, cut) in zip(axes.flat, series):
            for name in retrievers:
                pts = overall.filter((pl.col("retriever") == name) & (pl.col("family") == family)
                                     & (pl.col("cut") == cut)).sort("k")
                ax.plot(pts["k"].to_list(), pts["mean"].to_list(), marker="o", label=name)
            ks = sorted(set(overall["k"].drop_nulls().to_list()))
            ax.set_xscale("log")
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.minorticks_off()
            ax.set_title(f"{family} {cut}".strip())
            ax.set_xlabel("k")
            ax.set_ylim(0, 1)
        axes[0][0].legend(fontsize="small")
        out["metric_by_k"] = _save(fig, folder / "metric_by_k.png")

    if "tier" in inputs.board.columns and inputs.board["tier"].n_unique() > 1:
        tiers = inputs.board.filter((pl.col("measure") == inputs.headline) & (pl.col("tier") != "all"))
        tier_names = tiers["tier"].unique(maintain_order=True).to_list()
        fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(tier_names) * max(1, len(retrievers)) / 2), 3.5))
        width = 0.8 / max(1, len(retrievers))
        for i, name in enumerate(retrievers):
            vals = [tiers.filter((pl.col("retriever") == name) & (pl.col("tier") == t))["mean"].sum()
                    for t in tier_names]
            ax.bar([j + i * width for j in range(len(tier_names))], vals, width, label=name)
        ax.set_xticks([j + width * (len(retrievers) - 1) / 2 for j in range(len(tier_names))], tier_names,
                      rotation=20, fontsize="small")
        ax.set_ylabel(_label(inputs.board, inputs.headline))
        ax.set_ylim(0, 1)
        ax.legend(fontsize="small", bbox_to_anchor=(1.01, 1), loc="upper left")
        out["per_tier"] = _save(fig, folder / "per_tier.png")

    if inputs.label_counts is not None or inputs.label_mix is not None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
        if inputs.label_counts is not None:
            counts = inputs.label_counts.sort("relevance")
            axes[0].bar([str(x) for x in counts["relevance"].to_list()], counts["count"].to_list(), color="#4c72b0")
            axes[0].set_title("Judged labels (all pairs)")
            axes[0].set_xlabel("score")
        if inputs.label_mix is not None:
            labels = sorted(set(inputs.label_mix["label"].to_list()), key=lambda s: (s == "unjudged", s))
            bottom = [0.0] * len(retrievers)
            for lab in labels:
                vals = [inputs.label_mix.filter((pl.col("retriever") == n) & (pl.col("label") == lab))["share"].sum()
                        for n in retrievers]
                axes[1].bar(retrievers, vals, bottom=bottom, label=lab,
                            color="#bbbbbb" if lab == "unjudged" else None)
                bottom = [b + v for b, v in zip(bottom, vals)]
            axes[1].set_title(f"Labels of the top-{inputs.mix_k} slots")
            axes[1].legend(fontsize="x-small", title="label", bbox_to_anchor=(1.01, 1), loc="upper left")
            axes[1].tick_params(axis="x", labelrotation=20)
        out["score_distribution"] = _save(fig, folder / "score_distribution.png")
    if inputs.segments is not None and (name := segment_figure(inputs.segments, folder, inputs.headline)):
        out["segments"] = name
    return out


def _save(fig, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path.name


def _table(df: pl.DataFrame) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in df.columns)
    rows = []
    for row in df.iter_rows():
        rows.append("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _label(board: pl.DataFrame, measure: str) -> str:
    hit = board.filter(pl.col("measure") == measure)
    return hit["label"][0] if hit.height else measure


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return _e("" if v is None else str(v))


def _e(s: str) -> str:
    return html.escape(s, quote=True)
