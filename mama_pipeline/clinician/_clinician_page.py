"""Clinician agreement as Markdown (release cards) and as a static HTML page (reports/clinician).

Values are printed with fixed formats and rows in a fixed order, so the same
tables give the same bytes.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import polars as pl

from mama_pipeline.clinician._clinician_agreement import ANNOTATORS, MAJORITY
from mama_pipeline.clinician._estimates import ESTIMATED, EXPLANATION, UNIFORM
from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.html_page import interval, number, page, plural
from mama_pipeline.common.html_page import table as _table
from mama_pipeline.common.manuscript_export import ExportTable, write_tables
from mama_pipeline.common.markdown import VERBATIM, frame_table

PAGE = "agreement.html"
TITLE = "Clinician validation"
SYNTHETIC_NOTE = (
    "made-up annotators of the offline demo, not clinicians' judgements: figures that rest on them "
    "show the mechanics only"
)
HEADLINE = {  # kind -> metrics shown per comparison, in this order
    "relevance": (
        "exact_score_agreement",
        "within_one_point",
        "weighted_kappa_linear",
        "weighted_kappa_quadratic",
        "lenient_agreement",
        "strict_agreement",
        "d1_topic_agreement",
        "d2_meaningful_agreement",
        "d3_actionable_agreement",
        "d4_density_agreement",
    ),
    "scope": ("category_agreement", "in_scope_agreement", "cohens_kappa"),
}
LLM = {"relevance": "relevance judge", "scope": "scope classifier"}


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else number(v)


def comparison_table(metrics: pl.DataFrame, kind: str) -> pl.DataFrame:
    """One row per comparison (each clinician, then the majority), one column per headline metric."""
    m = metrics.filter((pl.col("kind") == kind) & (pl.col("comparison") != ANNOTATORS))
    names = sorted(set(m["comparison"]) - {MAJORITY}) + ([MAJORITY] if MAJORITY in set(m["comparison"]) else [])
    rows = []
    for name in names:
        got = {r["metric"]: r for r in m.filter(pl.col("comparison") == name).to_dicts()}
        pairs = max((r["pairs"] for r in got.values()), default=0)
        rows.append(
            {
                "comparison": f"{LLM[kind]} vs {name}",
                "pairs": pairs,
                **{k: _fmt(got[k]["value"]) if k in got else "n/a" for k in HEADLINE[kind]},
            }
        )
    return pl.DataFrame(
        rows, schema={"comparison": pl.String, "pairs": pl.Int64, **{k: pl.String for k in HEADLINE[kind]}}
    )


ESTIMATE_COLUMNS = (
    "retriever",
    "tier",
    "measure",
    "top_k_places",
    "judge_only",
    "corrected_95ci",
    "labelled_of_pairs",
    "unresolved_of_sampled",
    "ties_counted_low_high",
    "circularity",
)


def estimates_table(estimates: pl.DataFrame) -> pl.DataFrame:
    """One row per (retriever, tier, measure): the judge-only figure beside the corrected one, or why none, with
    the sampled pairs left out (no majority label; of them tied) and the estimate with the ties counted each way."""
    rows = []
    for r in estimates.iter_rows(named=True):
        corrected = (
            interval(r["estimate"], r["ci_low"], r["ci_high"])
            if r["status"] == ESTIMATED
            else f"refused: {r['reason']}"
        )
        rows.append(
            {
                "retriever": r["retriever"],
                "tier": r["tier"],
                "measure": r["label"],
                "top_k_places": f"{plural(r['queries'], 'query')} × {r['k']}",
                "judge_only": _fmt(r["judge_only"]),
                "corrected_95ci": corrected,
                "labelled_of_pairs": f"{r['labelled']} of {r['pairs']}",
                "unresolved_of_sampled": f"{r['unresolved']} of {r['sampled']} ({r['tied']} tied)",
                "ties_counted_low_high": (
                    f"{_fmt(r['estimate_ties_low'])} / {_fmt(r['estimate_ties_high'])}"
                    if r["status"] == ESTIMATED
                    else ""
                ),
                "circularity": r["circularity"] or "",
            }
        )
    return pl.DataFrame(rows, schema=dict.fromkeys(ESTIMATE_COLUMNS, pl.String))


def estimates_intro(estimates: pl.DataFrame) -> str:
    """What the corrected figures are, in two sentences, and whose labels they rest on."""
    synthetic = bool(estimates["synthetic"].any()) if estimates.height else False
    who = (
        "SYNTHETIC annotators' (made-up, not clinicians; the figures show the mechanics only)"
        if synthetic
        else "clinicians'"
    )
    return (
        f"{EXPLANATION} The judge-only figure is the evaluation scoreboard's: over the tier's queries × k top-k "
        "places (`top_k_places`), a place without a label counting 0. "
        f"Corrected with the {who} majority labels on the uniform estimation sample; "
        "`labelled_of_pairs`: sampled pairs with a majority label out of the cell's top-k pairs; "
        "`unresolved_of_sampled`: sampled pairs without one (annotators tied, or too few annotations), left out as "
        "if missing at random; `ties_counted_low_high`: the corrected figure with each tied pair counted at the "
        "lowest, then the highest score its annotators gave."
    )


def alpha_table(metrics: pl.DataFrame, kind: str) -> pl.DataFrame:
    a = metrics.filter((pl.col("kind") == kind) & (pl.col("comparison") == ANNOTATORS)).sort("metric")
    return a.select(
        pl.col("metric").str.replace("krippendorff_alpha_", ""),
        pl.col("value").map_elements(_fmt, return_dtype=pl.String).alias("krippendorff_alpha"),
        pl.col("pairs").alias("units_coded_twice"),
    )


def synthetic_note(k: int, n: int, what: str) -> str:
    return f"{k} of the {n} {what} are SYNTHETIC ({SYNTHETIC_NOTE})"


def raters(synthetic: bool) -> str:
    """Who the agreement figures are of: clinicians, or SYNTHETIC annotators when any label shown is made up."""
    return "SYNTHETIC annotators (made up, not clinicians)" if synthetic else "clinicians"


def annotators(n: int, synthetic: bool) -> str:
    """Who labelled a validated task: ``n`` clinicians, or ``n`` made-up annotators when synthetic."""
    who = "SYNTHETIC made-up annotator" if synthetic else "clinician"
    return f"{n} {who}{'' if n == 1 else 's'}" + (" (demo annotations, not clinicians)" if synthetic else "")


def markdown_section(
    metrics: pl.DataFrame,
    validated: pl.DataFrame,
    kind: str,
    synthetic: bool,
    min_annotations: int,
    estimates: pl.DataFrame | None = None,
    labels: pl.DataFrame | None = None,
) -> str:
    """The release card's section on clinician validation of one kind of label (with the corrected figures
    when an estimation sample was drawn). ``labels``: every label of the agreement tables (``clinician_labels``);
    any synthetic one among them, or among the validated tasks, marks the section SYNTHETIC."""
    v = validated.filter(pl.col("kind") == kind)
    mine = labels.filter(pl.col("kind") == kind) if labels is not None else None
    made_up = int(mine["synthetic"].sum()) if mine is not None and mine.height else 0
    synthetic = synthetic or bool(made_up) or bool(v["synthetic"].any())
    shown = metrics.filter(pl.col("kind") == kind).height
    parts = [
        "## Annotator validation (SYNTHETIC annotators, not clinicians)\n" if synthetic else "## Clinician validation\n"
    ]
    if synthetic:
        notes = [synthetic_note(int(v["synthetic"].sum()), v.height, "tasks")] if v.height else []
        if made_up and shown:
            notes.append(synthetic_note(made_up, mine.height, f"{kind} labels behind the agreement tables"))
        notes = notes or [f"the labels are SYNTHETIC ({SYNTHETIC_NOTE})"]
        parts.append(f"> **{'; '.join(notes)}; the `synthetic` column marks them.**\n")
    parts.append(
        f"A seeded, stratified sample was labelled in Label Studio with the {LLM[kind]}'s own "
        f"definitions beside each task. The `clinician_validated` configuration holds the {v.height} tasks labelled "
        f"by at least {annotators(min_annotations, synthetic)} (`clinician.min_annotations`), adjudicated by "
        f"majority; {int(v['tie'].sum())} ties are listed (`tie` true, `tied_on` names the dimension) with no "
        "label.\n"
    )
    if shown:
        parts.append(frame_table(comparison_table(metrics, kind), VERBATIM) + "\n")
        parts.append(
            f"Agreement between {raters(synthetic)} (Krippendorff's alpha):\n\n"
            + frame_table(alpha_table(metrics, kind), VERBATIM)
            + "\n"
        )
    if kind == "relevance" and estimates is not None and (estimates["design"] == UNIFORM).any():
        parts.append("### Judge-only and corrected figures\n\n" + estimates_intro(estimates) + "\n")
        parts.append(frame_table(estimates_table(estimates), VERBATIM) + "\n")
    return "\n".join(parts)


def write_report(
    folder: Path,
    metrics: pl.DataFrame,
    confusion: pl.DataFrame,
    validated: pl.DataFrame,
    labels: pl.DataFrame,
    min_annotations: int,
    estimates: pl.DataFrame | None = None,
) -> Path:
    """Write ``folder/agreement.html`` (folder replaced atomically); returns the page."""
    sources = sorted(set(labels["source"]))
    synthetic = int(labels["synthetic"].sum())
    who = raters(bool(synthetic))
    banners = [f"{synthetic_note(synthetic, labels.height, 'labels')}."] if synthetic else []
    parts = []
    exports = []
    parts.append(f"<p>Labels from: {html.escape(', '.join(sources) or '(none)')}.</p>")
    for kind in ("relevance", "scope"):
        v = validated.filter(pl.col("kind") == kind)
        parts.append(
            f"<h2>{html.escape(LLM[kind])}</h2><p>{v.height} tasks with at least {min_annotations} "
            f"usable annotations, {int(v['tie'].sum())} ties, {int(v['synthetic'].sum())} synthetic.</p>"
        )
        compared = _in_words(comparison_table(metrics, kind))
        parts.append(_table(compared))
        parts.append(f"<h3>Between {html.escape(who)}</h3>" + _table(_in_words(alpha_table(metrics, kind))))
        if compared.height:
            exports.append(
                ExportTable(
                    f"clinician_agreement_{kind}",
                    compared,
                    f"Agreement of the {LLM[kind]} with each of the {who} and with their majority, over the pairs "
                    f"both labelled (pairs); {v.height} validated tasks; no interval, no test.",
                )
            )
        c = confusion.filter((pl.col("kind") == kind) & (pl.col("comparison") == MAJORITY))
        if c.height:
            wide = c.pivot(on="clinician", index="llm", values="count", sort_columns=True).sort("llm").fill_null(0)
            parts.append(
                f"<h3>Confusion: LLM (rows) vs the majority of the {html.escape(who)} (columns)</h3>" + _table(wide)
            )
    if estimates is not None and estimates.height:
        intro = re.sub(r"`(\w+)`", lambda m: m.group(1).replace("_", " "), estimates_intro(estimates))  # headings
        parts.append(f"<h2>Judge-only and corrected figures</h2><p>{html.escape(intro)}</p>")
        shown = _in_words(estimates_table(estimates.filter(pl.col("status") == ESTIMATED)))
        if shown.height:
            parts.append(_table(shown))
            exports.append(
                ExportTable(
                    "clinician_corrected_estimates",
                    shown,
                    f"Judge-only figure beside the figure corrected with the majority labels of the {who} on the "
                    "uniform estimation sample (95% interval); labelled of pairs: sampled pairs with a majority "
                    "label out of the cell's top-k pairs; no multiple-comparison correction.",
                )
            )
        parts += refusal_lines(estimates)
    with atomic_folder(folder) as tmp:
        files = write_tables(tmp, exports)
        if files:
            links = ", ".join(f"<a href='{html.escape(f)}'>{html.escape(f)}</a>" for f in files)
            parts.append(f"<p class='note'>For a manuscript: {links}.</p>")
        (tmp / PAGE).write_text(
            page(
                TITLE,
                parts,
                headline_figures(metrics, validated, synthetic),
                heading=(
                    "Validation of the LLM judges against SYNTHETIC annotators (made up, not clinicians)"
                    if synthetic
                    else "Clinician validation of the LLM judges"
                ),
                banners=banners,
            ),
            encoding="utf-8",
        )
    return folder / PAGE


def refusal_lines(estimates: pl.DataFrame) -> list[str]:
    """One line per distinct refusal reason of the corrected figures, with how many cells it refused."""
    refused = estimates.filter(pl.col("status") != ESTIMATED)
    return [
        f"<p class='note'>No corrected figure for {plural(n, 'cell')} (retriever, tier and measure): "
        f"{html.escape(str(reason))}.</p>"
        for reason, n in refused.group_by("reason", maintain_order=True).len().iter_rows()
    ]


def _in_words(frame: pl.DataFrame) -> pl.DataFrame:
    """A table with the reader's words: column names and metric names without underscores."""
    out = frame.rename({c: c.replace("_", " ").replace("95ci", "(95% CI)") for c in frame.columns})
    if "metric" in out.columns:
        out = out.with_columns(pl.col("metric").str.replace_all("_", " "))
    return out


def headline_figures(metrics: pl.DataFrame, validated: pl.DataFrame, synthetic: int) -> list[tuple[str, str]]:
    """Per kind of label: the validated tasks, and the LLM's agreement with the clinicians' majority on its first
    headline measure, over the pairs compared."""
    figures = []
    for kind in ("relevance", "scope"):
        tasks = validated.filter(pl.col("kind") == kind).height
        row = metrics.filter(
            (pl.col("kind") == kind) & (pl.col("comparison") == MAJORITY) & (pl.col("metric") == HEADLINE[kind][0])
        )
        agreement = (
            f"; {HEADLINE[kind][0].replace('_', ' ')} {number(row['value'][0])} over {plural(row['pairs'][0], 'pair')}"
            if row.height and row["value"][0] is not None
            else ""
        )
        who = "SYNTHETIC annotators" if synthetic else "clinicians"
        figures.append((f"{LLM[kind]} vs {who}", f"{plural(tasks, 'validated task')}{agreement}"))
    if synthetic:
        figures.append(("SYNTHETIC labels", f"{synthetic} (demo annotations, not clinicians)"))
    return figures
