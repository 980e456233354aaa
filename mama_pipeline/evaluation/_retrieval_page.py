"""Static HTML report: header, scoreboard with intervals, significance matrix, breakdowns, audits (PNGs beside it).

The page is a list of sections (:data:`SECTIONS`): each is a function of the inputs
and the output folder that returns its HTML (empty when it has nothing to show) and
writes its own figures, so a new section is one function added to the list. Output
is deterministic: fixed ordering, fixed number formats, PNGs without a timestamp or
software stamp, and no clock reading (dates shown come from the inputs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.held_out import HeldOutRule
from mama_pipeline.common.html_page import Refusals, interval, p_value, page, plural, signed
from mama_pipeline.common.html_page import esc as _e
from mama_pipeline.common.html_page import table as _table
from mama_pipeline.common.manuscript_export import (
    BEST,
    TIED_WITH_BEST,
    ExportTable,
    best_and_tied,
    save_figure,
    write_tables,
)
from mama_pipeline.evaluation._held_out_gaps import gaps_html
from mama_pipeline.evaluation._per_query_scoring import wide_scoreboard
from mama_pipeline.evaluation._segment_section import interval_bars, segment_figure, segments_html
from mama_pipeline.evaluation._segments import SegmentResult
from mama_pipeline.llm.embedded_banner import STAGE_WORDS
from mama_pipeline.llm.reference_audit import SELF_CONSISTENCY, audit_title

PAGE = "scoreboard.html"


@dataclass
class ReportInputs:
    """What one report shows; optional parts are left out when absent."""

    title: str
    board: pl.DataFrame  # scoreboard rows (tier column: "all" and per tier)
    significance: pl.DataFrame
    headline: str  # measure of the per-segment breakdowns
    notes: list[str] = field(default_factory=list)  # sentences under the header (duplicates shown once)
    header: list[tuple[str, str]] = field(default_factory=list)  # facts: corpus version, judge model, dates, counts
    per_query: pl.DataFrame | None = None  # retriever, query_id, measure, value: intervals and breakdowns
    headline_measures: list[str] | None = None  # shown with intervals; default: the significance measures
    segments: dict[str, pl.DataFrame] = field(default_factory=dict)  # name -> (query_id, segment), e.g. source
    label_counts: pl.DataFrame | None = None  # relevance, count
    label_mix: pl.DataFrame | None = None  # retriever, label, share
    mix_k: int | None = None
    reliability: pl.DataFrame | None = None  # reference_stage, audit, reference_model, metric, value, pairs, note
    confusion: pl.DataFrame | None = None  # reference_stage, audit, reference_model, main_score, ref_0..ref_6
    completeness: pl.DataFrame | None = None  # scope, cut, ..., recall_micro, recall_macro
    audits: list[tuple[str, pl.DataFrame]] = field(default_factory=list)  # (heading, table)
    segment_tests: SegmentResult | None = None  # per-segment means and paired tests (evaluation/_segments.py)
    held_out: pl.DataFrame | None = None  # retrieval_gaps under the declared held-out rule (_held_out_gaps.py)
    held_out_rule: HeldOutRule | None = None
    alpha: float = 0.05
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    banners: list[str] = field(default_factory=list)  # what the reader must know first (embedded model, synthetic)
    segment_order: dict[str, list[str]] = field(default_factory=dict)  # segment -> its values in reading order
    cis: dict[tuple[str, str], tuple[float | None, float | None]] = field(default_factory=dict, repr=False)
    ci_refused: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)  # why an interval is missing
    refusals: Refusals = field(default_factory=Refusals, repr=False)  # the page's refusal marks and notes


Section = Callable[[ReportInputs, Path], str]


def label_mix(
    run: pl.DataFrame | Iterable[pl.DataFrame], qrels: pl.DataFrame | Callable[[list[str]], pl.DataFrame], k: int
) -> pl.DataFrame:
    """Share of each retriever's top-k slots by judged label ("unjudged" when no label); ``run`` may come in parts
    holding whole queries (slices of queries), and ``qrels`` be a part's query ids -> their qrels."""
    counts = [pl.DataFrame(schema={"retriever": pl.String, "label": pl.String, "len": pl.UInt32})]
    for part in [run] if isinstance(run, pl.DataFrame) else run:
        top = part.sort("retriever", "query_id", "rank").filter(
            pl.int_range(pl.len()).over("retriever", "query_id") < k
        )
        part_qrels = qrels(part["query_id"].unique().to_list()) if callable(qrels) else qrels
        labelled = top.join(part_qrels, on=["query_id", "doc_id"], how="left").with_columns(
            pl.col("relevance").cast(pl.String).fill_null("unjudged").alias("label")
        )
        counts.append(labelled.group_by("retriever", "label").len())
    return (
        pl.concat(counts)
        .group_by("retriever", "label")
        .agg(pl.col("len").sum())
        .with_columns((pl.col("len") / pl.col("len").sum().over("retriever")).alias("share"))
        .select("retriever", "label", "share")
        .sort("retriever", "label")
    )


def write_report(inputs: ReportInputs, folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/scoreboard.html`` and its PNGs (folder replaced atomically); returns the page."""
    folder = Path(folder)
    inputs = replace(inputs, refusals=Refusals())  # this page's marks: a rebuild writes the same bytes
    with atomic_folder(folder) as tmp:
        headline = headline_figures(inputs)
        top = inputs.refusals.headline_note()  # before the body's notes: the reasons are written out here first
        body = [part for section in SECTIONS if (part := section(inputs, tmp))]
        body.append(_exports(inputs, tmp))
        (tmp / PAGE).write_text(
            page(inputs.title, body, headline, banners=inputs.banners, headline_note=top), encoding="utf-8"
        )
    return folder / PAGE


def headline_figures(inputs: ReportInputs) -> list[tuple[str, str]]:
    """The headline measure's mean per retriever over all benchmark queries, with its bootstrap interval when the
    per-query values are at hand."""
    rows = _overall(inputs.board).filter(pl.col("measure") == inputs.headline)
    label = _label(inputs.board, inputs.headline)
    out = []
    for r in rows.iter_rows(named=True):
        low, high = _ci(inputs, r["retriever"], inputs.headline)
        ci = f" ({inputs.confidence:.0%} CI)" if low is not None else ""
        shown = {"mean": r["mean"], "ci_low": low, "ci_high": high}
        shown["refused"] = inputs.ci_refused.get((r["retriever"], inputs.headline))
        out.append(
            (
                f"{r['retriever']}: {label}{ci}",
                f"{_interval_or_reason(shown, inputs.refusals)} over {plural(r['n_queries'], 'query')}",
            )
        )
    return out


def _ci(inputs: ReportInputs, retriever: str, measure: str) -> tuple[float | None, float | None]:
    if inputs.per_query is None:
        return None, None
    from mama_pipeline.evaluation._significance import StatisticRefused, bootstrap_mean_ci

    if (retriever, measure) not in inputs.cis:
        values = inputs.per_query.filter((pl.col("retriever") == retriever) & (pl.col("measure") == measure))
        if values.height == 0:
            return None, None
        values = values.sort("query_id")  # the declared order: query id, as the per-query files
        try:
            inputs.cis[retriever, measure] = bootstrap_mean_ci(
                values["value"].to_numpy(), inputs.resamples, inputs.seed, inputs.confidence
            )
        except StatisticRefused as refused:
            inputs.cis[retriever, measure] = (None, None)
            inputs.ci_refused[retriever, measure] = refused.reason
    return inputs.cis[retriever, measure]


# -- sections ---------------------------------------------------------------------------------------------


def header_section(inputs: ReportInputs, _folder: Path) -> str:
    parts = []
    if inputs.header:
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in inputs.header)
        parts.append(f"<table class='facts'>{rows}</table>")
    parts += [f"<p class='note'>{_e(n)}</p>" for n in dict.fromkeys(inputs.notes)]
    return "\n".join(parts)


def scoreboard_section(inputs: ReportInputs, _folder: Path) -> str:
    overall = _overall(inputs.board)
    parts = ["<h2>Scoreboard</h2>"]
    intervals = headline_intervals(inputs)
    if intervals is not None:
        parts.append(
            f"<p class='note'>Headline measures: mean over all {overall['n_queries'][0]} benchmark "
            f"queries with its {inputs.confidence:.0%} bootstrap interval (queries resampled, "
            f"{inputs.resamples} resamples, seed {inputs.seed}). A query with no qualifying document "
            "scores 0.</p>"
        )
        parts.append(_table(intervals) + inputs.refusals.note())
    no_rel = _queries_without_relevant(overall)
    if no_rel:
        parts.append(f"<p>Queries without any qualifying document, of {overall['n_queries'][0]}: {no_rel}.</p>")
    wide = _all_measures(overall)
    parts.append(
        f"<details{' open' if intervals is None else ''}><summary>All {wide.height} measures "
        "(robust measures first)</summary>"
        f"<p class='note'>Each a mean over all {plural(overall['n_queries'][0], 'query')}; P@k and wP@k: the "
        "top k's qualifying documents (wP: grade over the top grade) over k, so over queries &times; k top-k "
        "places, a place without a label counting 0 (the clinician page's judge-only figure).</p>"
        + _table(wide)
        + "</details>"
    )
    return "\n".join(parts)


def significance_section(inputs: ReportInputs, folder: Path) -> str:
    sig = inputs.significance
    if sig.height == 0:
        return "<h2>Paired significance</h2><p>Fewer than two retrievers: nothing to compare.</p>"
    out = [
        "<h2>Paired significance</h2>",
        "<p class='note'>Cells: mean difference row &minus; column, bootstrap confidence interval, Holm-adjusted "
        f"p of the paired randomization test (bold: p &lt; {inputs.alpha}). For hit rates the exact McNemar "
        "p (Holm) follows.</p>",
    ]
    heatmap = _significance_heatmap(inputs, folder)
    if heatmap:
        out.append(f"<img src='{heatmap}' alt='Paired differences and Holm-adjusted significance'>")
    for measure in sig["measure"].unique(maintain_order=True).to_list():
        names, cells = _pairs(sig, measure)
        head = "".join(f"<th>{_e(n)}</th>" for n in names)
        body = []
        for a in names:
            tds = []
            for b in names:
                r, sign = (cells.get((a, b)), 1) if (a, b) in cells else (cells.get((b, a)), -1)
                tds.append("<td></td>" if r is None else _cell(r, sign, inputs.alpha, inputs.refusals))
            body.append(f"<tr><th>{_e(a)}</th>{''.join(tds)}</tr>")
        out.append(
            f"<h3>{_e(_label(inputs.board, measure))}</h3><table><tr><th></th>{head}</tr>{''.join(body)}</table>"
            + inputs.refusals.note()
        )
    return "\n".join(out)


def cutoff_section(inputs: ReportInputs, folder: Path) -> str:
    figure = _metric_by_k(inputs, folder)
    return f"<h2>Measures by cutoff k</h2><img src='{figure}' alt='Measures by cutoff k'>" if figure else ""


def segments_section(inputs: ReportInputs, folder: Path) -> str:
    """The headline measure per tier and per other segment: mean, bootstrap interval and n of each bar (from the
    per-query values; the scoreboard's per-tier means, without intervals, when those are absent)."""
    label = _label(inputs.board, inputs.headline)
    out = []
    for name, stats in _segment_stats(inputs).items():
        figure = _bars(stats, label, folder / f"per_{_slug(name)}.png")
        columns = stats["segment"].unique(maintain_order=True).to_list()
        sizes = dict(stats.select("segment", "n").unique("segment", maintain_order=True).iter_rows())
        cell = {
            (r["retriever"], r["segment"]): interval(r["mean"], r["ci_low"], r["ci_high"])
            for r in stats.iter_rows(named=True)
        }
        retrievers = stats["retriever"].unique(maintain_order=True).to_list()
        wide = pl.DataFrame(
            [
                {"retriever": r, **{f"{c} (n={sizes[c]})": cell.get((r, c), "no queries") for c in columns}}
                for r in retrievers
            ],
            schema={"retriever": pl.String, **{f"{c} (n={sizes[c]})": pl.String for c in columns}},
        )
        ci = (
            f" with its {inputs.confidence:.0%} bootstrap interval ({inputs.resamples} resamples)"
            if stats["ci_low"].is_not_null().any()
            else ""
        )
        out.append(
            f"<h2>Per-{_e(name)} results</h2><img src='{figure}' alt='Per-{_e(name)} results'>"
            f"<h3>{_e(label)} by {_e(name)}</h3><p class='note'>Mean over the {_e(name)}'s queries{ci}; "
            "n: queries of the segment.</p>" + _table(wide)
        )
    return "\n".join(out)


def _segment_stats(inputs: ReportInputs) -> dict[str, pl.DataFrame]:
    """Segment name -> (retriever, segment, mean, ci_low, ci_high, n) of the headline measure, segments in their
    reading order (``segment_order``, else largest first), retrievers in scoreboard order."""
    out: dict[str, pl.DataFrame] = {}
    retrievers = _overall(inputs.board)["retriever"].unique(maintain_order=True).to_list()
    board = inputs.board
    if inputs.per_query is None:
        if "tier" in board.columns and board["tier"].n_unique() > 1:
            tiers = board.filter((pl.col("measure") == inputs.headline) & (pl.col("tier") != "all"))
            out["tier"] = tiers.select(
                "retriever",
                pl.col("tier").alias("segment"),
                "mean",
                pl.lit(None, pl.Float64).alias("ci_low"),
                pl.lit(None, pl.Float64).alias("ci_high"),
                pl.col("n_queries").alias("n"),
            ).sort(
                pl.col("segment").replace_strict(_order(inputs, "tier", tiers["tier"]), default=10**6),
                maintain_order=True,
            )
        return out
    from mama_pipeline.evaluation._significance import StatisticRefused, bootstrap_mean_ci

    values = inputs.per_query.filter(pl.col("measure") == inputs.headline)
    for name, mapping in inputs.segments.items():
        seg = mapping.select(pl.col("query_id").cast(pl.String), pl.col(name).cast(pl.String).fill_null("(none)"))
        joined = values.join(seg, on="query_id")
        if joined.height == 0:
            continue
        rank = _order(inputs, name, seg[name])
        rows = []
        for (retriever, segment), part in joined.group_by("retriever", name):
            v = part.sort("query_id")["value"].to_numpy()  # the declared order: query id
            try:
                low, high = bootstrap_mean_ci(v, inputs.resamples, inputs.seed, inputs.confidence)
            except StatisticRefused:  # too few queries in the segment: the bar has no interval, its n says why
                low, high = None, None
            rows.append((retriever, segment, float(v.mean()), low, high, len(v)))
        frame = pl.DataFrame(
            rows,
            schema={
                "retriever": pl.String,
                "segment": pl.String,
                "mean": pl.Float64,
                "ci_low": pl.Float64,
                "ci_high": pl.Float64,
                "n": pl.Int64,
            },
            orient="row",
        )
        out[name] = frame.sort(
            pl.col("segment").replace_strict(rank, default=len(rank)),
            pl.col("retriever").replace_strict({r: i for i, r in enumerate(retrievers)}, default=len(retrievers)),
        )
    return out


def _order(inputs: ReportInputs, name: str, values: pl.Series) -> dict[str, int]:
    """Segment value -> its place: the declared order first (tiers in tier order), then largest first."""
    declared = [v for v in inputs.segment_order.get(name, []) if v in set(values.to_list())]
    sizes = values.value_counts().sort(["count", values.name], descending=[True, False])[values.name].to_list()
    return {v: i for i, v in enumerate(dict.fromkeys([*declared, *sizes]))}


def labels_section(inputs: ReportInputs, folder: Path) -> str:
    if inputs.label_counts is None and inputs.label_mix is None:
        return ""
    figure = _label_figure(inputs, folder)
    parts = ["<h2>Label distribution</h2>", f"<img src='{figure}' alt='Label distribution'>"]
    if inputs.label_counts is not None:
        counts = inputs.label_counts.sort("relevance")
        total = int(counts["count"].sum())
        parts.append(
            _table(
                counts.with_columns((pl.col("count") / total).alias("share")).rename(
                    {"relevance": "label", "count": "pairs"}
                )
            )
        )
    return "\n".join(parts)


def reliability_section(inputs: ReportInputs, folder: Path) -> str:
    if inputs.reliability is None:
        return ""
    parts = ["<h2>Judge reliability</h2>"]
    audits = inputs.reliability.select("reference_stage", "audit", "reference_model").unique(maintain_order=True)
    for i, (stage, kind, model) in enumerate(audits.iter_rows()):
        rows = inputs.reliability.filter(pl.col("reference_stage") == stage)
        what = (
            "the judge against its own model asked again (another seed, temperature or endpoint)"
            if kind == SELF_CONSISTENCY
            else "the judge against another model"
        )
        parts += [
            f"<h3>{_e(audit_title(kind).capitalize())}: {_e(model)} ({_e(STAGE_WORDS.get(stage, stage))})</h3>",
            f"<p class='note'>{what.capitalize()}, on the stratified pilot sample.</p>",
            _table(rows.drop("reference_stage", "audit", "reference_model")),
        ]
        confusion = (
            inputs.confusion.filter(pl.col("reference_stage") == stage) if inputs.confusion is not None else None
        )
        if confusion is not None and confusion.height:
            name = "judge_confusion.png" if i == 0 else f"judge_confusion_{stage}.png"
            figure = _confusion_figure(confusion, folder / name)
            parts.append(f"<img src='{figure}' alt='Judge versus {_e(stage)} score confusion'>")
    return "\n".join(parts)


def completeness_section(inputs: ReportInputs, folder: Path) -> str:
    if inputs.completeness is None:
        return ""
    parts = [
        "<h2>Pool completeness</h2>",
        "<p class='note'>Recall of the main pool against every relevant chunk known on the audit queries "
        "(main and deeper audit pools, judged).</p>",
        _table(inputs.completeness),
    ]
    if inputs.completeness.filter(pl.col("recall_micro").is_not_null()).height:
        figure = _completeness_figure(inputs.completeness, folder / "pool_completeness.png")
        parts.append(f"<img src='{figure}' alt='Pool completeness'>")
    return "\n".join(parts)


def audits_section(inputs: ReportInputs, _folder: Path) -> str:
    return "\n".join(f"<h2>{_e(heading)}</h2>" + _table(table) for heading, table in inputs.audits if table.height)


def segment_tests_section(inputs: ReportInputs, folder: Path) -> str:
    if inputs.segment_tests is None:
        return ""
    figure = segment_figure(inputs.segment_tests, folder, inputs.headline)
    return segments_html(inputs.segment_tests, inputs.headline, inputs.alpha, figure, inputs.refusals)


def held_out_section(inputs: ReportInputs, _folder: Path) -> str:
    if inputs.held_out is None or inputs.held_out_rule is None:
        return ""
    labels = dict(inputs.board.select("measure", "label").unique("measure").iter_rows())
    held = inputs.held_out.with_columns(pl.col("measure").replace(labels))  # the paper's labels
    return gaps_html(held, ["retriever", "measure"], inputs.held_out_rule, "queries", inputs.resamples, inputs.seed)


def _exports(inputs: ReportInputs, folder: Path) -> str:
    """The page's tables as LaTeX and CSV files beside it (figures are saved as PNG, SVG and PDF by ``_save``)."""
    overall = _overall(inputs.board)
    n = overall["n_queries"][0] if overall.height else 0
    boot = (
        f"{inputs.confidence:.0%} BCa bootstrap intervals (queries resampled, {inputs.resamples} resamples, "
        f"seed {inputs.seed})"
    )
    tables = []
    stats = headline_stats(inputs)
    if stats is not None:
        refused = Refusals()  # the table's own marks, their reasons in its caption
        shown = headline_intervals(inputs, refused)
        marks = {}
        for lab, part in stats.group_by("label", maintain_order=True):
            tops = _best_and_tied(part, inputs.significance, inputs.alpha)
            mean_of = dict(zip(part["retriever"].to_list(), part["mean"].to_list()))
            names = shown["retriever"].to_list()
            tied = [tops.get(name) == TIED_WITH_BEST for name in names]
            for i, mark in best_and_tied([mean_of.get(name) for name in names], tied).items():
                marks[i, lab[0]] = mark
        tables.append(
            ExportTable(
                "scoreboard_headline",
                stats,
                f"{inputs.title}: mean over all {plural(n, 'query')} (a query with no qualifying document scores 0) "
                f"with {boot}. Best in bold; tied with the best: Holm-adjusted paired randomization p >= "
                f"{inputs.alpha} against it (Holm across every pair of retrievers per measure)."
                + "".join(f" {line}." for line in refused.lines()),
                shown,
                marks,
            )
        )
    tables.append(
        ExportTable(
            "scoreboard_all_measures",
            _all_measures(overall),
            f"{inputs.title}: mean of every measure over all {plural(n, 'query')}; no interval, no test.",
        )
    )
    sig = inputs.significance
    for measure in sig["measure"].unique(maintain_order=True).to_list() if sig.height else []:
        rows = sig.filter(pl.col("measure") == measure)
        data = rows.select(
            "retriever_a",
            "retriever_b",
            *[
                c
                for c in ("n_queries", "diff", "ci_low", "ci_high", "p_randomization_holm", "p_mcnemar_holm")
                if c in rows.columns
            ],
        )
        tables.append(
            ExportTable(
                f"significance_{_slug(_label(inputs.board, measure))}",
                data,
                f"{_label(inputs.board, measure)}: paired differences (first - second retriever) over the queries "
                f"both ranked, {boot}; p of the paired randomization test (and exact McNemar on 0/1 measures), "
                "Holm-adjusted across every pair of retrievers.",
            )
        )
    for name, seg in _segment_stats(inputs).items():
        tables.append(
            ExportTable(
                f"per_{_slug(name)}",
                seg,
                f"{_label(inputs.board, inputs.headline)} per {name}: mean over the {name}'s queries (n) with {boot}; "
                "no multiple-comparison correction (descriptive).",
            )
        )
    files = write_tables(folder, tables)
    links = ", ".join(f"<a href='{_e(f)}'>{_e(f)}</a>" for f in files)
    return (
        "<h2>For a manuscript</h2><p class='note'>Every table above also as LaTeX (booktabs) and CSV, every figure "
        f"also as SVG and PDF (same name): {links}.</p>"
    )


def _best_and_tied(stats: pl.DataFrame, sig: pl.DataFrame, alpha: float) -> dict[str, str]:
    """Retriever -> BEST or TIED_WITH_BEST on one measure: the highest mean, and those whose Holm-adjusted paired
    p against it is >= alpha."""
    if stats.height == 0 or stats["mean"].is_null().all():
        return {}
    top = stats["mean"].max()
    best = stats.filter(pl.col("mean") == top)["retriever"].to_list()
    out = dict.fromkeys(best, BEST)
    measure = stats["measure"][0]
    if not sig.height:
        return out
    rows = sig.filter(pl.col("measure") == measure)
    for r in rows.iter_rows(named=True):
        a, b = r["retriever_a"], r["retriever_b"]
        other = b if a in best else a if b in best else None
        if other is not None and other not in out and r["p_randomization_holm"] >= alpha:
            out[other] = TIED_WITH_BEST
    return out


SECTIONS: list[Section] = [
    header_section,
    scoreboard_section,
    significance_section,
    held_out_section,
    cutoff_section,
    segments_section,
    segment_tests_section,
    labels_section,
    reliability_section,
    completeness_section,
    audits_section,
]


# -- tables and numbers -----------------------------------------------------------------------------------


def headline_stats(inputs: ReportInputs) -> pl.DataFrame | None:
    """(retriever, measure, label, mean, ci_low, ci_high, n_queries, refused) of each headline measure over all
    queries (bootstrap over queries; ``refused``: why an interval is missing); None without per-query values."""
    if inputs.per_query is None:
        return None
    measures = inputs.headline_measures or inputs.significance["measure"].unique(maintain_order=True).to_list()
    measures = [m for m in measures if m in set(inputs.per_query["measure"].unique().to_list())]
    if not measures:
        return None
    rows = []
    for r in _overall(inputs.board).filter(pl.col("measure").is_in(measures)).iter_rows(named=True):
        low, high = _ci(inputs, r["retriever"], r["measure"])
        rows.append({**{k: r[k] for k in ("retriever", "measure", "label", "mean")}, "ci_low": low, "ci_high": high})
        rows[-1]["n_queries"] = r["n_queries"]
        rows[-1]["refused"] = inputs.ci_refused.get((r["retriever"], r["measure"]))
    order = {m: i for i, m in enumerate(measures)}
    return pl.DataFrame(rows).sort(pl.col("measure").replace_strict(order), maintain_order=True)


def headline_intervals(inputs: ReportInputs, refusals: Refusals | None = None) -> pl.DataFrame | None:
    """Retriever x headline measure: ``mean [low, high]`` (bootstrap over queries), or the mean with the mark of
    the reason its interval is refused (``refusals``: default the page's); None without per-query values."""
    stats = headline_stats(inputs)
    if stats is None:
        return None
    retrievers = stats["retriever"].unique(maintain_order=True).to_list()
    labels = stats["label"].unique(maintain_order=True).to_list()
    refusals = inputs.refusals if refusals is None else refusals
    cell = {(r["retriever"], r["label"]): _interval_or_reason(r, refusals) for r in stats.iter_rows(named=True)}
    return pl.DataFrame(
        [{"retriever": name, **{lab: cell.get((name, lab), "") for lab in labels}} for name in retrievers],
        schema={"retriever": pl.String, **dict.fromkeys(labels, pl.String)},
    )


def _interval_or_reason(r: dict, refusals: Refusals) -> str:
    """``mean [low, high]``, or the mean with the mark of the reason its interval is refused."""
    if r["ci_low"] is None and r.get("refused"):
        return refusals.figure(r["mean"], r["refused"])
    return interval(r["mean"], r["ci_low"], r["ci_high"])


def _all_measures(overall: pl.DataFrame) -> pl.DataFrame:
    """Measure x retriever means (one row per measure, scoreboard order): narrow enough for any number of
    measures."""
    wide = wide_scoreboard(overall)
    labels = wide.columns[1:]
    return pl.DataFrame(
        {"measure": labels, **{row["retriever"]: [row[lab] for lab in labels] for row in wide.iter_rows(named=True)}}
    )


def _queries_without_relevant(overall: pl.DataFrame) -> str:
    """``lenient (label >= 3): 4, strict (label >= 5): 9``, one entry per distinct cut and threshold."""
    rows = (
        overall.filter(pl.col("queries_no_relevant").is_not_null())
        .with_columns(pl.col("rel").fill_null(1).alias("threshold"), pl.col("cut").fill_null("").alias("cut_name"))
        .group_by("cut_name", "threshold")
        .agg(pl.col("queries_no_relevant").first())
        .sort("threshold", "cut_name")
    )
    return ", ".join(
        f"{r['cut_name'] or 'relevant'} (label &ge; {r['threshold']}): {r['queries_no_relevant']}"
        for r in rows.iter_rows(named=True)
    )


def _pairs(sig: pl.DataFrame, measure: str) -> tuple[list[str], dict[tuple[str, str], dict]]:
    rows = sig.filter(pl.col("measure") == measure)
    names = list(dict.fromkeys(rows["retriever_a"].to_list() + rows["retriever_b"].to_list()))
    return names, {(r["retriever_a"], r["retriever_b"]): r for r in rows.iter_rows(named=True)}


def _cell(r: dict, sign: int, alpha: float, refusals: Refusals) -> str:
    diff = sign * r["diff"]
    text = signed(diff)
    if r["ci_low"] is not None:
        low, high = (r["ci_low"], r["ci_high"]) if sign == 1 else (-r["ci_high"], -r["ci_low"])
        text += f" <span class='ci'>[{signed(low)}, {signed(high)}]</span>"
    p = r["p_randomization_holm"]
    if p is not None:
        text += f"<br>p {_p(p)}"
    if r["p_mcnemar_holm"] is not None:
        text += f"<br>McNemar p {_p(r['p_mcnemar_holm'])}"
    if r.get("refused"):
        text += f"<br><small>{refusals.missing(r['refused'])}</small>"
    return f"<td class='{'sig' if p is not None and p < alpha else ''}'>{text}</td>"


def _overall(board: pl.DataFrame) -> pl.DataFrame:
    return board.filter(pl.col("tier") == "all") if "tier" in board.columns else board


def _label(board: pl.DataFrame, measure: str) -> str:
    hit = board.filter(pl.col("measure") == measure)
    return hit["label"][0] if hit.height else measure


def _p(p: float) -> str:
    """``= 0.012`` or ``&lt; 0.001``."""
    text = p_value(p)
    return text if text.startswith("&lt;") else f"= {text}"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())


# -- figures ----------------------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> str:
    """The figure as PNG (shown on the page) and as SVG and PDF beside it (for a manuscript)."""
    return save_figure(fig, path)


def _metric_by_k(inputs: ReportInputs, folder: Path) -> str | None:
    overall = _overall(inputs.board)
    retrievers = overall["retriever"].unique(maintain_order=True).to_list()
    series = (
        overall.filter(pl.col("k").is_not_null() & pl.col("family").is_in(["HR", "nDCG", "P", "wHR", "wP"]))
        .select("family", "cut")
        .unique(maintain_order=True)
        .rows()
    )
    if not series:
        return None
    plt = _pyplot()
    ncols = min(4, len(series))
    nrows = -(-len(series) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
    for ax in axes.flat[len(series) :]:
        ax.set_visible(False)
    ks = sorted(set(overall["k"].drop_nulls().to_list()))
    for ax, (family, cut) in zip(axes.flat, series):
        for name in retrievers:
            pts = overall.filter(
                (pl.col("retriever") == name) & (pl.col("family") == family) & (pl.col("cut") == cut)
            ).sort("k")
            ax.plot(pts["k"].to_list(), pts["mean"].to_list(), marker="o", label=name)
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_title(f"{family} {cut}".strip())
        ax.set_xlabel("k")
        ax.set_ylim(0, 1)
    axes[0][0].legend(fontsize="small")
    return _save(fig, folder / "metric_by_k.png")


def _significance_heatmap(inputs: ReportInputs, folder: Path) -> str | None:
    """One panel per measure: mean difference row - column, '*' where the Holm-adjusted p < alpha."""
    import numpy as np

    measures = inputs.significance["measure"].unique(maintain_order=True).to_list()
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(measures), figsize=(3.6 * len(measures), 3.4), squeeze=False)
    for ax, measure in zip(axes.flat, measures):
        names, cells = _pairs(inputs.significance, measure)
        matrix = np.full((len(names), len(names)), np.nan)
        for i, a in enumerate(names):
            for j, b in enumerate(names):
                r, sign = (cells.get((a, b)), 1) if (a, b) in cells else (cells.get((b, a)), -1)
                if r is None:
                    continue
                matrix[i, j] = sign * r["diff"]
        bound = float(np.nanmax(np.abs(matrix))) if np.isfinite(matrix).any() else 1.0
        for (i, j), value in np.ndenumerate(matrix):
            if np.isfinite(value):
                a, b = names[i], names[j]
                r = cells.get((a, b)) or cells.get((b, a))
                p = r["p_randomization_holm"]
                star = "*" if p is not None and p < inputs.alpha else ""
                dark = bound > 0 and abs(value) > 0.6 * bound
                ax.text(
                    j,
                    i,
                    f"{signed(value)}{star}",
                    ha="center",
                    va="center",
                    fontsize="small",
                    color="white" if dark else "black",
                )
        image = ax.imshow(matrix, cmap="RdBu", vmin=-(bound or 1.0), vmax=bound or 1.0)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize="small")
        ax.set_yticks(range(len(names)), names, fontsize="small")
        ax.set_title(_label(inputs.board, measure), fontsize="small")
        fig.colorbar(image, ax=ax, shrink=0.7)
    fig.suptitle(f"row - column; * Holm p < {inputs.alpha}", fontsize="small")
    return _save(fig, folder / "significance_heatmap.png")


def _bars(stats: pl.DataFrame, ylabel: str, path: Path) -> str:
    """Grouped bars of ``stats`` as :func:`segment_section.interval_bars` draws them, saved beside the page."""
    plt = _pyplot()
    groups = stats["segment"].n_unique()
    retrievers = max(1, stats["retriever"].n_unique())
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * groups * retrievers / 2 + 2), 4))
    interval_bars(ax, stats)
    ax.set_ylabel(ylabel)
    return _save(fig, path)


def _label_figure(inputs: ReportInputs, folder: Path) -> str:
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    if inputs.label_counts is not None:
        counts = inputs.label_counts.sort("relevance")
        axes[0].bar([str(x) for x in counts["relevance"].to_list()], counts["count"].to_list(), color="#4c72b0")
        axes[0].set_title("Labels (all labelled pairs)")
        axes[0].set_xlabel("label")
    else:
        axes[0].set_visible(False)
    if inputs.label_mix is not None:
        retrievers = _overall(inputs.board)["retriever"].unique(maintain_order=True).to_list()
        labels = sorted(set(inputs.label_mix["label"].to_list()), key=lambda s: (s == "unjudged", s))
        bottom = [0.0] * len(retrievers)
        for lab in labels:
            vals = [
                inputs.label_mix.filter((pl.col("retriever") == n) & (pl.col("label") == lab))["share"].sum()
                for n in retrievers
            ]
            axes[1].bar(retrievers, vals, bottom=bottom, label=lab, color="#bbbbbb" if lab == "unjudged" else None)
            bottom = [b + v for b, v in zip(bottom, vals)]
        axes[1].set_title(f"Labels of the top-{inputs.mix_k} slots")
        axes[1].legend(fontsize="x-small", title="label", bbox_to_anchor=(1.01, 1), loc="upper left")
        axes[1].tick_params(axis="x", labelrotation=20)
    else:
        axes[1].set_visible(False)
    return _save(fig, folder / "score_distribution.png")


def _confusion_figure(confusion: pl.DataFrame, path: Path) -> str:
    import numpy as np

    plt = _pyplot()
    cols = [c for c in confusion.columns if c.startswith("ref_")]
    matrix = confusion.sort("main_score").select(cols).to_numpy()
    fig, ax = plt.subplots(figsize=(4.6, 4))
    image = ax.imshow(matrix, cmap="Blues")
    for (i, j), v in np.ndenumerate(matrix):
        if v:
            ax.text(j, i, str(int(v)), ha="center", va="center", fontsize="small")
    ax.set_xticks(range(len(cols)), [c.removeprefix("ref_") for c in cols])
    ax.set_yticks(range(matrix.shape[0]), [str(s) for s in confusion.sort("main_score")["main_score"].to_list()])
    ax.set_xlabel("reference judge score")
    ax.set_ylabel("judge score")
    fig.colorbar(image, ax=ax, shrink=0.8)
    return _save(fig, path)


def _completeness_figure(table: pl.DataFrame, path: Path) -> str:
    plt = _pyplot()
    scopes = table["scope"].unique(maintain_order=True).to_list()
    cuts = table["cut"].unique(maintain_order=True).to_list()
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(scopes) * len(cuts)), 3.4))
    width = 0.8 / max(1, len(cuts))
    for i, cut in enumerate(cuts):
        vals = [
            table.filter((pl.col("scope") == s) & (pl.col("cut") == cut))["recall_micro"].fill_null(0.0).sum()
            for s in scopes
        ]
        ax.bar([j + i * width for j in range(len(scopes))], vals, width, label=cut)
    ax.set_xticks([j + width * (len(cuts) - 1) / 2 for j in range(len(scopes))], scopes, rotation=20, fontsize="small")
    ax.set_ylabel("main-pool recall (micro)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize="small")
    return _save(fig, path)
