"""The systems report: an HTML page with the scoreboard (error bars), closed-book vs RAG deltas,
significance, the rubric grader's agreement with physicians, failures, and per-item result files.

Output is deterministic: fixed ordering and number formats, PNGs without a
timestamp. Per-item files (``items/<system>.jsonl``) hold item id, track, pool,
scope category, answer, grade, score and the retrieved chunk ids, so anyone can
run a paired test against these results.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.common.held_out import HeldOutRule
from mama_pipeline.common.html_page import Refusals, interval, p_value, page, plural, signed
from mama_pipeline.common.html_page import esc as _e
from mama_pipeline.common.html_page import table as _table
from mama_pipeline.common.manuscript_export import ExportTable, save_figure, write_tables
from mama_pipeline.common.metadata import FAILURES_SHOWN
from mama_pipeline.evaluation import gaps_html, track_label
from mama_pipeline.systems._grading import ANSWER_FAILED
from mama_pipeline.systems._systems_scoreboard import MEASURE_OF_TRACK

PAGE = "systems.html"
ITEMS_DIR = "items"
TITLE = "mamabench: answering systems"
ITEM_FILE_COLUMNS = (
    "item_id",
    "track",
    "pool",
    "category",
    "status",
    "answer",
    "grade",
    "score",
    "correct",
    "invalid",
    "chunk_ids",
    "prompt_hash",
    "grader_prompt_hash",
    "error",
)


@dataclass
class SystemsReport:
    board: pl.DataFrame
    comparisons: pl.DataFrame
    grades: pl.DataFrame
    answers: pl.DataFrame
    systems: list[dict]  # name, mode, model, endpoint, retriever, k, baseline
    grader: dict[str, str]  # what graded: stage -> "model @ endpoint, prompt <hash>"
    harness: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    alpha: float = 0.05
    answer_failures: str = "exclude"  # systems.answer_failures: which mean is the headline
    rubric_parse_retries: int = 1  # llm.rubric_judge.parse_retries, stated beside HealthBench's rule
    held_out: pl.DataFrame | None = None  # system_gaps under the declared held-out rule (evaluation/_held_out_gaps.py)
    held_out_rule: HeldOutRule | None = None
    resamples: int = 2000  # of the held-out permutation test
    seed: int = 0
    banners: list[str] = field(default_factory=list)  # what the reader must know first (embedded model)


def sample_note(n_items: int, items_per_track: int, seed: int, max_rubric_criteria: int, left_out: int) -> str:
    """Which items the figures are on: all, a per-track sample, and the rubric items left out by their size."""
    big = f"the {left_out} rubric items with more than {max_rubric_criteria} criteria"
    if not items_per_track:
        return f"{n_items} items ({f'all but {big}' if left_out else 'all'})"
    sample = f"{items_per_track} per track, seed {seed}"
    return f"{n_items} items ({f'{sample}, after leaving out {big}' if left_out else sample})"


def scoreboard_note(answer_failures: str) -> str:
    """What the scoreboard's figures are, under the failure policy in effect."""
    unanswered = (
        "unanswered items (transport failures: HTTP errors and timeouts after the client's retries, an "
        "endpoint down past its patience) are listed and "
    )
    unanswered += (
        "left out of the mean (the configured policy); the mean with unanswered as 0 counts them as 0"
        if answer_failures == "exclude"
        else "count as 0 in the mean (the configured policy); the mean of answered items leaves them out"
    )
    return (
        "Mean per track with its bootstrap interval over items (multiple choice: accuracy; short answer: correct 1, "
        "partially correct 0.5, incorrect 0; rubric: the mean of HealthBench example scores, not clipped, which "
        "are the values the paired comparisons use, with HealthBench's score, that mean clipped to [0, 1], "
        "beside it as the HealthBench score). A system's own output that cannot be graded (JSON breaking the schema, "
        "an empty answer, an answer cut at max_tokens, no valid letter) is a wrong answer: score 0, counted in "
        f"invalid answers. The {unanswered}. Answers the grader could not grade (grade failures) are listed and in "
        "neither mean. A system whose unanswered items, or whose ungraded answers, exceed the failure bound "
        "(the system's own bound, or the answer or rubric grader's) has its "
        "figures on that track refused, with the reason. Rubric rows show the rubric grader's agreement with "
        "physicians on the calibration side-file (same grader, same scope category) beside the score."
    )


def healthbench_note(parse_retries: int) -> str:
    """Where the rubric grading differs from HealthBench's simple-evals."""
    retries = f"re-asked {parse_retries} time{'s' if parse_retries != 1 else ''}" if parse_retries else "not re-asked"
    return (
        "Rubric grading differs from HealthBench's simple-evals (healthbench_eval.py) in three ways: the grader "
        "prompt is this project's (the rubric grader prompt the calibration harness checks against "
        "physicians), not simple-evals' GRADER_TEMPLATE; the grader is given each criterion without its "
        '"[points]" prefix (simple-evals writes "[5] criterion"), as the physicians\' meta-eval rows the '
        f"harness grades carry none; a grader answer that does not parse is {retries} "
        "and then listed as a grader failure, where simple-evals asks again "
        "until it parses. The rubric figures are not directly comparable with published HealthBench scores."
    )


def item_results(answers: pl.DataFrame, grades: pl.DataFrame) -> pl.DataFrame:
    """Answers joined with their grades, one row per (system, item)."""
    joined = answers.select("system", "item_id", "answer", "chunk_ids", "prompt_hash").join(
        grades, on=["system", "item_id"], how="inner", validate="1:1"
    )
    return joined.select("system", *ITEM_FILE_COLUMNS).sort("system", "track", "item_id")


def write_report(report: SystemsReport, folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/systems.html``, its PNGs and ``items/<system>.jsonl`` (folder replaced atomically)."""
    folder = Path(folder)
    results = item_results(report.answers, report.grades)
    with atomic_folder(folder) as tmp:
        (tmp / ITEMS_DIR).mkdir()
        for system in sorted(results["system"].unique().to_list()):
            rows = results.filter(pl.col("system") == system).drop("system")
            with open(tmp / ITEMS_DIR / f"{system}.jsonl", "w", encoding="utf-8", newline="\n") as fh:
                for row in rows.iter_rows(named=True):
                    fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        figures = _figures(report, tmp)
        exported = write_tables(tmp, _exports(report))
        (tmp / PAGE).write_text(_page(report, figures, exported), encoding="utf-8")
    return folder / PAGE


def headline_figures(report: SystemsReport, refusals: Refusals | None = None) -> list[tuple[str, str]]:
    """Each system's headline mean per track, over the items it was scored on (or the mark of why it is refused:
    ``refusals``, the page's)."""
    refusals = Refusals() if refusals is None else refusals
    overall = report.board.filter(pl.col("segment_kind") == "all").sort("track", "system")
    return [
        (
            f"{r['system']}: {track_label(r['track'])} ({MEASURE_OF_TRACK[r['track']]})",
            f"refused{refusals.mark(r['refused'])}"
            if r["refused"] is not None
            else f"{_mean_interval(r, refusals)} over {r['n_scored']} of "
            f"{plural(r['n_items'], 'item')}{_scored_without_grading(r, report.answer_failures)}",
        )
        for r in overall.iter_rows(named=True)
        if r["refused"] is not None or r["mean"] is not None
    ]


def _mean_interval(r: dict, refusals: Refusals) -> str:
    """``mean [low, high]``, or the mean with the mark of why its interval is refused."""
    if r["ci_low"] is None and r.get("interval_refused"):
        return refusals.figure(r["mean"], r["interval_refused"])
    return interval(r["mean"], r["ci_low"], r["ci_high"])


def _scored_without_grading(r: dict, answer_failures: str) -> str:
    """`` (1 invalid answer scored 0)``: the scored items that no grader saw, as the headline's mean counts them."""
    parts = []
    if r["n_invalid"]:
        parts.append(f"{plural(r['n_invalid'], 'invalid answer')} scored 0")
    if answer_failures == "score_zero" and r["n_unanswered"]:
        parts.append(f"{plural(r['n_unanswered'], 'unanswered item')} counted as 0")
    return f" ({'; '.join(parts)}, not graded)" if parts else ""


def no_rubric_grade_note(grades: pl.DataFrame) -> str:
    """Why the rubric grader graded nothing: the rubric items' answers, unanswered or invalid (scored 0 without
    grading), counted; the calibration harness's grader cannot be compared."""
    rubric = grades.filter(pl.col("track") == "rubric")
    if rubric.is_empty():
        return "No rubric item was answered or scored: the calibration harness's grader is not compared."
    invalid = rubric.filter(pl.col("invalid").fill_null(False)).height
    unanswered = rubric.filter(pl.col("status") == ANSWER_FAILED).height
    why = [f"{plural(invalid, 'invalid answer')} scored 0 without grading"] if invalid else []
    why += [f"{unanswered} unanswered"] if unanswered else []
    return (
        f"The rubric grader graded no answer; of {plural(rubric.height, 'rubric item')}"
        f"{': ' + ', '.join(why) if why else ''}. The calibration harness's grader is not compared."
    )


def _page(r: SystemsReport, figures: dict[str, str], exported: list[str]) -> str:
    refusals = Refusals()  # the page's: each reason written out once, under the headline or the first table
    headline = headline_figures(r, refusals)
    top = refusals.headline_note()
    parts = [f"<p class='note'>{_e(n)}</p>" for n in r.notes]
    systems = pl.DataFrame(r.systems)
    if "tracks" in systems.columns:  # the reader's names of the tracks
        systems = systems.with_columns(
            pl.col("tracks").map_elements(lambda t: ", ".join(map(track_label, t.split(", "))), pl.String)
        )
    parts.append("<h2>Systems</h2>" + _table(systems))
    parts.append("<h2>Graders</h2><ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in r.grader.items()) + "</ul>")
    parts.append(f"<h2>Scoreboard</h2><p class='note'>{_e(scoreboard_note(r.answer_failures))}</p>")
    for track in ("mcq", "short_answer", "rubric"):
        block = r.board.filter(pl.col("track") == track)
        if block.is_empty():
            continue
        parts.append(f"<h3>{_e(track_label(track))} ({MEASURE_OF_TRACK[track]})</h3>")
        if track == "rubric":
            parts.append(f"<p class='note'>{_e(healthbench_note(r.rubric_parse_retries))}</p>")
        overall = block.filter(pl.col("segment_kind") == "all")
        parts.append(_table(_board_view(overall, track, refusals), refusals=refusals))
        if f"bars_{track}" in figures:
            parts.append(f"<img src='{figures[f'bars_{track}']}' alt='{track_label(track)} by scope category'>")
        for kind in ("category", "pool"):
            seg = block.filter(pl.col("segment_kind") == kind)
            if seg.height:
                wide = seg.with_columns(_interval_text(seg, refusals).alias("v")).pivot(
                    on="system", index="segment", values="v", maintain_order=True
                )
                parts.append(f"<h4>by {kind}</h4>" + _table(wide) + refusals.note())
    parts.append(_deltas_section(r, figures, refusals))
    parts.append(_significance_section(r, refusals))
    if r.held_out is not None and r.held_out_rule is not None:
        parts.append(gaps_html(r.held_out, ["system", "track"], r.held_out_rule, "items", r.resamples, r.seed))
    parts.append(_harness_section(r))
    parts.append(_failures_section(r))
    files = ", ".join(
        f"<a href='{ITEMS_DIR}/{_e(s)}.jsonl'>{_e(s)}</a>" for s in sorted(r.grades["system"].unique().to_list())
    )
    parts.append(f"<h2>Per-item results</h2><p>{files or '(none)'}</p>")
    links = ", ".join(f"<a href='{_e(f)}'>{_e(f)}</a>" for f in exported)
    parts.append(
        "<h2>For a manuscript</h2><p class='note'>The scoreboard, comparison and grader-agreement tables as LaTeX "
        f"(booktabs) and CSV, every figure also as SVG and PDF (same name): {links}.</p>"
    )
    return page(TITLE, parts, headline, banners=r.banners, headline_note=top)


def _interval_text(rows: pl.DataFrame, refusals: Refusals) -> pl.Series:
    """``mean [low, high] n=k`` per row at the pages' one precision, the mean with the mark of the reason its
    interval is refused, ``refused`` or empty."""

    def text(x: dict) -> str:
        if x["refused"] is not None:
            return "refused"
        if x["mean"] is None:
            return ""
        if x["ci_low"] is None and x.get("interval_refused"):
            return refusals.figure(x["mean"], x["interval_refused"], x["n_scored"])
        return interval(x["mean"], x["ci_low"], x["ci_high"], x["n_scored"])

    return pl.Series(
        [text(x) for x in rows.iter_rows(named=True)],
        dtype=pl.String,
    )


BOARD_HEADINGS = {
    "n_items": "items",
    "n_scored": "scored",
    "n_unanswered": "unanswered",
    "mean_answered": "mean of answered",
    "mean_unanswered_as_0": "mean, unanswered as 0",
    "n_invalid": "invalid",
    "n_grade_failed": "grade failures",
    "healthbench_score": "HealthBench score",
    "grader_rows": "grader rows",
    "grader_macro_f1": "grader macro F1",
    "grader_balanced_accuracy": "grader balanced accuracy",
    "grader_agree_on_met": "grader agreement, met",
    "grader_agree_on_not_met": "grader agreement, not met",
}


def _board_view(board: pl.DataFrame, track: str, refusals: Refusals) -> pl.DataFrame:
    cols = ["n_items", "n_scored", "n_unanswered", "mean_answered", "mean_unanswered_as_0", "n_invalid"]
    cols.append("n_grade_failed")
    if track == "rubric":
        cols += [
            "healthbench_score",
            "grader_rows",
            "grader_macro_f1",
            "grader_balanced_accuracy",
            "grader_agree_on_met",
            "grader_agree_on_not_met",
        ]
    return board.select(
        "system", _interval_text(board, refusals).alias("mean [95% CI] n"), *cols, pl.col("refused").fill_null("")
    ).rename(BOARD_HEADINGS, strict=False)


def _deltas(r: SystemsReport) -> pl.DataFrame:
    return r.comparisons.filter(pl.col("comparison") == "rag_vs_baseline")


def _deltas_section(r: SystemsReport, figures: dict[str, str], refusals: Refusals) -> str:
    d = _deltas(r)
    if d.is_empty():
        return (
            "<h2>Closed-book vs RAG</h2><p>No comparison: no RAG system names a closed-book baseline, one of "
            "the two is refused over its failure bound, or fewer than two items were scored for both.</p>"
        )
    view = d.select(
        pl.col("track").map_elements(track_label, pl.String),
        "segment",
        pl.col("system_a").alias("rag"),
        pl.col("system_b").alias("closed-book"),
        "n_queries",
        "mean_a",
        "mean_b",
        "diff",
        "ci_low",
        "ci_high",
        "p_randomization_holm",
        "p_mcnemar_holm",
        "refused",
    )
    out = [
        "<h2>Closed-book vs RAG</h2><p class='note'>diff = RAG &minus; closed-book on items scored for both, "
        "per scope category, with the paired bootstrap interval and Holm-adjusted p values.</p>",
        _table(view, refusals=refusals),
    ]
    if "deltas" in figures:
        out.append(f"<img src='{figures['deltas']}' alt='closed-book vs RAG deltas'>")
    return "\n".join(out)


def _interval(row: dict, refusals: Refusals) -> str:
    """``[low, high]``, or the mark of why the interval was refused."""
    if row["ci_low"] is None:
        return f"no interval{refusals.mark(row['refused'])}" if row.get("refused") else "no interval"
    return f"[{signed(row['ci_low'])}, {signed(row['ci_high'])}]"


def _significance_section(r: SystemsReport, refusals: Refusals) -> str:
    sig = r.comparisons.filter(pl.col("segment") == "ALL")
    if sig.is_empty():
        return (
            "<h2>Paired significance</h2><p>Nothing to compare: fewer than two systems on every track that are "
            "not refused over a failure bound, or fewer than two items scored for both.</p>"
        )
    rows = []
    for row in sig.iter_rows(named=True):
        p = row["p_randomization_holm"]
        cls = "sig" if p is not None and p < r.alpha else ""
        mc = (
            ""
            if row["p_mcnemar_holm"] is None
            else f"{p_value(row['p_mcnemar_holm'])} ({row['only_a']}/{row['only_b']})"
        )
        rows.append(
            f"<tr class='{cls}'><td>{_e(track_label(row['track']))}</td><td>{_e(row['system_a'])}</td>"
            f"<td>{_e(row['system_b'])}</td><td>{row['n_queries']}</td><td>{signed(row['diff'])}</td>"
            f"<td class='ci'>{_interval(row, refusals)}</td><td>{'' if p is None else p_value(p)}</td><td>{mc}</td></tr>"
        )
    head = (
        "<tr><th>track</th><th>a</th><th>b</th><th>items</th><th>a &minus; b</th><th>bootstrap CI</th>"
        "<th>randomization p (Holm)</th><th>exact McNemar p (Holm) (only a/only b)</th></tr>"
    )
    return (
        f"<h2>Paired significance</h2><p class='note'>On the items scored for both, with the scoreboard's "
        f"per-item values; exact McNemar on mcq only; Holm across the pairs of each track; bold: p &lt; "
        f"{r.alpha}.</p><div class='scroll'><table>{head}{''.join(rows)}</table></div>{refusals.note()}"
    )


def _harness_section(r: SystemsReport) -> str:
    if r.harness is None or r.harness.is_empty():
        return (
            "<h2>Rubric grader vs physicians</h2><p>No calibration harness result: the rubric grader's "
            "agreement with physicians is unknown.</p>"
        )
    view = r.harness.filter(pl.col("rater").is_in(["judge", "physicians_pooled"])).select(
        "rater",
        "scope_category",
        "rows",
        "met_rate",
        "reference_met_rate",
        "agree_on_met",
        "agree_on_not_met",
        "consensus_agreement",
        "macro_f1",
        "balanced_accuracy",
    )
    return (
        "<h2>Rubric grader vs physicians</h2><p class='note'>The calibration harness run with the rubric grader "
        "used here (stage rubric_judge, same prompt), on HealthBench's physician labels; physicians against "
        "each other as the baseline.</p>" + _table(view)
    )


def _failures_section(r: SystemsReport) -> str:
    columns = ("system", "track", "item_id", "status", "error")
    failed = r.grades.filter(pl.col("status") != "graded").select(columns)
    broken = r.grades.filter(pl.col("invalid").fill_null(False) & pl.col("error").is_not_null()).select(columns)
    if failed.is_empty() and broken.is_empty():
        return "<h2>Failures</h2><p>None.</p>"
    zero = "counted as 0 in mean" if r.answer_failures == "score_zero" else "left out of mean"
    out = [
        f"<h2>Failures</h2><p class='note'>answer failed: not answered (transport failures), {zero}; "
        "grade failed: answered, not graded, in neither mean. Graded and invalid: the system's own output could "
        f"not be graded, scored 0. {failed.height + broken.height} in all; the first {FAILURES_SHOWN} of each "
        "kind are listed.</p>"
    ]
    for part in (failed, broken.with_columns(pl.lit("invalid").alias("status"))):
        if part.height:
            out.append(_table(part.group_by("system", "track", "status").len().sort("system", "track", "status")))
            out.append(_table(part.sort("system", "track", "item_id").head(FAILURES_SHOWN)))
    return "\n".join(out)


def _figures(r: SystemsReport, folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, str] = {}
    for track in ("mcq", "short_answer", "rubric"):
        seg = r.board.filter(
            (pl.col("track") == track)
            & pl.col("segment_kind").is_in(["all", "category"])
            & pl.col("mean").is_not_null()
        )
        if seg.is_empty():
            continue
        systems = seg["system"].unique().sort().to_list()
        segments = seg["segment"].unique(maintain_order=True).to_list()
        fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(segments) * max(1, len(systems)) / 2), 3.5))
        width = 0.8 / len(systems)
        for i, system in enumerate(systems):
            xs, ys, lo, hi = [], [], [], []
            for j, s in enumerate(segments):
                row = seg.filter((pl.col("system") == system) & (pl.col("segment") == s))
                if row.height:
                    m, a, b = row.row(0, named=True)["mean"], row["ci_low"][0], row["ci_high"][0]
                    xs.append(j + i * width)
                    ys.append(m)
                    lo.append(m - (a if a is not None else m))
                    hi.append((b if b is not None else m) - m)
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=system)
        ax.set_xticks(
            [j + width * (len(systems) - 1) / 2 for j in range(len(segments))], segments, rotation=20, fontsize="small"
        )
        ax.set_ylabel(MEASURE_OF_TRACK[track])
        ax.set_ylim(min([0.0, *seg["ci_low"].drop_nulls().to_list(), *seg["mean"].to_list()]) - 0.05, 1.05)
        ax.set_title(track_label(track))
        ax.legend(fontsize="small", bbox_to_anchor=(1.01, 1), loc="upper left")
        out[f"bars_{track}"] = _save(fig, folder / f"scores_{track}.png")
    d = _deltas(r)
    if d.height:
        labels = [
            f"{track_label(t)} {s}\n{a} vs {b}"
            for t, s, a, b in d.select("track", "segment", "system_a", "system_b").rows()
        ]
        fig, ax = plt.subplots(figsize=(5.5, 0.45 * len(labels) + 1.2))
        diffs = d["diff"].to_list()
        err = [
            [0.0 if lo is None else x - lo for x, lo in zip(diffs, d["ci_low"].to_list())],
            [0.0 if hi is None else hi - x for x, hi in zip(diffs, d["ci_high"].to_list())],
        ]
        ax.errorbar(diffs, list(range(len(labels))), xerr=err, fmt="o", capsize=3)
        ax.axvline(0, color="#999", linewidth=1)
        ax.set_yticks(list(range(len(labels))), labels, fontsize="x-small")
        ax.invert_yaxis()
        ax.set_xlabel("RAG minus closed-book")
        out["deltas"] = _save(fig, folder / "deltas.png")
    return out


def _save(fig, path: Path) -> str:
    return save_figure(fig, path)


def _exports(r: SystemsReport) -> list[ExportTable]:
    """The scoreboard of each track, the comparisons and the grader's agreement with physicians as tables."""
    boot = "BCa bootstrap interval over items"
    out = []
    for track in ("mcq", "short_answer", "rubric"):
        rows = r.board.filter((pl.col("track") == track) & (pl.col("segment_kind") == "all"))
        if rows.height:
            out.append(
                ExportTable(
                    f"systems_{track}",
                    rows.drop("track"),
                    f"mamabench {track_label(track)} ({MEASURE_OF_TRACK[track]}): mean over the items scored "
                    f"(of the items put to the system), {boot}; no test (see the comparisons).",
                )
            )
    if r.comparisons.height:
        out.append(
            ExportTable(
                "systems_comparisons",
                r.comparisons,
                "mamabench paired comparisons (first - second system) on the items scored for both, paired "
                f"{boot}; p of the paired randomization test (exact McNemar on mcq), Holm across the pairs of "
                "each track.",
            )
        )
    if r.harness is not None and r.harness.height:
        out.append(
            ExportTable(
                "systems_grader_agreement",
                r.harness,
                "Rubric grader against HealthBench's physician labels (calibration harness), per scope "
                "category (rows: graded criteria); physicians against each other as the baseline; no interval.",
            )
        )
    return out
