"""The leaderboard folder of one benchmark, as bytes: ``leaderboard.json``, one per-query file per entry and
track, and the static HTML page.

Per-query files, ``per_query/<track>/<source>/<name>.tsv``: a header ``query_id<TAB>measure<TAB>value``, then one
row per (query or item, measure) the entry's figures were computed from (public part only under the held-out
rule), sorted by query id and measure; values as Python writes floats (shortest repr, read back exactly). Pair two
entries' files on ``query_id`` and ``measure`` to re-run any paired test without rescoring either.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

import polars as pl

from mama_pipeline.common import html_page
from mama_pipeline.common.held_out import PUBLIC
from mama_pipeline.common.manuscript_export import (
    BEST,
    TIED_WITH_BEST,
    ExportTable,
    best_and_tied,
    figure_bytes,
    table_files,
)
from mama_pipeline.evaluation import SAFE_NAME, track_label
from mama_pipeline.llm.embedded_banner import embedded_banner

PER_QUERY_HEADER = "query_id\tmeasure\tvalue\n"
JSON_FILE, PAGE_FILE = "leaderboard.json", "leaderboard.html"
MANUSCRIPT = "manuscript"  # the folder of each track's LaTeX/CSV table and forest plot (PNG, SVG, PDF)
ENTRY_FIELDS = (
    "position",
    "n",
    "mean",
    "ci_low",
    "ci_high",
    "ci_note",
    "judged_measure",
    "judged_n",
    "judged_mean",
    "standing",
    "n_shared_with_best",
    "p_vs_best",
    "n_held_out",
    "mean_held_out",
    "gap",
    "p_gap",
    "gap_note",
)
COMPARISON_FIELDS = (
    "entry_a",
    "entry_b",
    "n_shared",
    "mean_a",
    "mean_b",
    "diff",
    "ci_low",
    "ci_high",
    "p_randomization",
    "p_holm",
    "only_a",
    "only_b",
    "p_mcnemar",
    "p_mcnemar_holm",
    "refused",
)
STANDING_FIELDS = ("standing_entries", "standing_units", "standing_resamples", "p_floor")
UNITS = {
    "main": "queries",
    "robustness": "query variants",
    "multipassage": "questions",
    "mcq": "items",
    "short_answer": "items",
    "rubric": "items",
}
TEST_UNITS = {  # the standing test's unit: the id the held-out rule hashes
    "main": "query",
    "robustness": "parent query (its variants together)",
    "multipassage": "question",
    "mcq": "item",
    "short_answer": "item",
    "rubric": "HealthBench prompt (its items together)",
}
SINGULAR = {"queries": "query", "query variants": "query variant", "questions": "question", "items": "item"}


def smoke_banners(s, benchmark: str) -> list[str]:
    """The banner of the benchmark's leaderboard when its labels, grades or systems came from the embedded model
    (stored in leaderboard.json as ``banners``)."""
    if benchmark == "mamaretrieval":
        return embedded_banner(s.llm, ("query_writer", "judge", "query_rewriter", "rewrite_gate"))
    return embedded_banner(s.llm, ("rubric_judge", "answer_grader"), [c.name for c in s.systems.entries if c.embedded])


def _count(n: int, unit: str) -> str:
    return html_page.plural(n, SINGULAR.get(unit, unit), unit)


def per_query_path(track: str, entry_id: str) -> str:
    """``per_query/<track>/<source>/<name>.tsv``; a name that cannot be a file name is an error."""
    source, _, name = entry_id.partition("/")
    if not SAFE_NAME.match(name):
        raise ValueError(
            f"leaderboard entry {entry_id!r} of track {track}: {name!r} cannot be a file name "
            "(letters, digits, '_', '.', '-')"
        )
    return f"per_query/{track}/{source}/{name}.tsv"


def per_query_tsv(values: pl.DataFrame) -> bytes:
    rows = values.sort("query_id", "measure")
    return (
        PER_QUERY_HEADER
        + "".join(f"{q}\t{m}\t{v!r}\n" for q, m, v in rows.select("query_id", "measure", "value").iter_rows())
    ).encode()


def read_per_query(data: bytes | str) -> pl.DataFrame:
    """A per-query file back as (query_id, measure, value)."""
    text = data.decode() if isinstance(data, bytes) else data
    lines = text.splitlines()
    if not lines or lines[0] + "\n" != PER_QUERY_HEADER:
        raise ValueError(f"not a leaderboard per-query file: header {lines[:1]}")
    rows = [line.split("\t") for line in lines[1:]]
    return pl.DataFrame(
        {"query_id": [r[0] for r in rows], "measure": [r[1] for r in rows], "value": [float(r[2]) for r in rows]},
        schema={"query_id": pl.String, "measure": pl.String, "value": pl.Float64},
    )


def _clean(v: Any) -> Any:
    """A value for JSON: NaN (an undefined figure) as null."""
    return None if isinstance(v, float) and math.isnan(v) else v


def leaderboard_json(
    benchmark: str,
    measures_of: dict[str, list[str]],
    entries: pl.DataFrame,
    comparisons: pl.DataFrame,
    per_query: pl.DataFrame,
    facts: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(the JSON document, per-query files path -> bytes) of the benchmark's tracks (``measures_of``: track ->
    its measures, headline first, in table order)."""
    files: dict[str, bytes] = {}
    tracks = []
    public = per_query.filter(pl.col("part") == PUBLIC)
    for track, measures in measures_of.items():
        mine = entries.filter(pl.col("track") == track)
        listed = []
        for entry_id, source, name, refused in (
            mine.select("entry_id", "source", "name", "refused")
            .unique(maintain_order=True)
            .sort("entry_id")
            .iter_rows()
        ):
            item: dict[str, Any] = {"entry_id": entry_id, "source": source, "name": name, "refused": refused}
            if refused is None:
                path = per_query_path(track, entry_id)
                files[path] = per_query_tsv(
                    public.filter((pl.col("track") == track) & (pl.col("entry_id") == entry_id))
                )
                item["per_query_file"] = path
                item["figures"] = {
                    r["measure"]: {k: _clean(r[k]) for k in ENTRY_FIELDS}
                    for r in mine.filter(pl.col("entry_id") == entry_id).iter_rows(named=True)
                }
            listed.append(item)
        comps = comparisons.filter(pl.col("track") == track).sort("measure", "entry_a", "entry_b")
        tracks.append(
            {
                "track": track,
                "unit": UNITS.get(track, "queries"),
                "measures": measures,
                "headline": measures[0],
                "standings": {
                    m: standing_facts(mine.filter(pl.col("measure") == m), track, facts["alpha"]) for m in measures
                },
                "entries": listed,
                "comparisons": {
                    m: [
                        {k: _clean(r[k]) for k in COMPARISON_FIELDS}
                        for r in comps.filter(pl.col("measure") == m).iter_rows(named=True)
                    ]
                    for m in measures
                },
            }
        )
    doc = {
        "benchmark": benchmark,
        **facts,
        "per_query_format": PER_QUERY_HEADER.strip().replace("\t", ", "),
        "tracks": tracks,
    }
    return doc, files


def standing_facts(rows: pl.DataFrame, track: str, alpha: float) -> dict[str, Any]:
    """The standing test of one track and measure, from its entries' rows: entries and units tested, resamples,
    the smallest attainable p and whether any entry could be placed below the best."""
    tested = rows.filter(pl.col("standing_entries").is_not_null())
    if tested.is_empty():
        return {"entries_tested": 0, "separable": False, "note": "no entry scored"}
    entries, units, resamples, floor = tested.select(STANDING_FIELDS).row(0)
    out = {
        "entries_tested": entries,
        "unit": TEST_UNITS.get(track, "query"),
        "units": units,
        "resamples": resamples,
        "smallest_attainable_p": _clean(floor),
        "separable": floor is not None and floor < alpha,
    }
    if floor is None:
        out["note"] = "one entry in the test: nothing to separate"
    elif floor >= alpha:
        out["note"] = (
            f"{html_page.plural(units, out['unit'] + ' unit')} and {entries} entries: the smallest attainable p is {floor:.3g} >= "
            f"alpha {alpha}, so no entry can be placed below the best at this n"
        )
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    return html_page.number(v) if isinstance(v, float) else html.escape(str(v))


def label(doc_or_track: dict[str, Any], measure: str) -> str:
    """The paper's label of a measure (``measure_labels`` of leaderboard.json; the name itself when it has none)."""
    return (doc_or_track.get("measure_labels") or {}).get(measure, measure)


def _ordered(track: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(
        track["entries"],
        key=lambda e: ((e.get("figures") or {}).get(track["headline"], {}).get("position") or 10**6, e["entry_id"]),
    )


def _refusals(entries: list[dict[str, Any]], columns: int) -> list[str]:
    """Refused entries' rows, one per distinct reason: the names that share it and how many."""
    reasons: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        reasons.setdefault(e["refused"], []).append(e)
    return [
        f'<tr class="refused"><td></td><td>{_fmt(", ".join(e["name"] for e in group))}</td>'
        f"<td>{_fmt(', '.join(sorted({e['source'] for e in group})))}</td>"
        f'<td colspan="{columns - 3}">refused ({html_page.plural(len(group), "entry", "entries")}): '
        f"{_fmt(reason)}</td></tr>"
        for reason, group in reasons.items()
    ]


def track_section(
    track: dict[str, Any],
    alpha: float,
    held_out: bool,
    describe: str | None = None,
    refusals: html_page.Refusals | None = None,
) -> str:
    """One track's table (headline measure and the others, intervals, Judged@k, standing) and its notes; a refused
    interval or gap shows a mark, its reason once per page (``refusals``: the page's)."""
    refusals = html_page.Refusals() if refusals is None else refusals
    measures = track["measures"]
    names = {m: label(track, m) for m in measures}
    head = ["#", "entry", "source", f"n {track['unit']}"]
    judged = {
        m: any((e.get("figures") or {}).get(m, {}).get("judged_measure") for e in track["entries"]) for m in measures
    }
    for m in measures:
        head += [names[m], "95% CI"] + (["Judged"] if judged[m] else [])
        if held_out:
            head += [f"{names[m]} held out", "gap", "p gap"]
    head.append(f"standing on {names[track['headline']]}")
    rows = []
    ordered = _ordered(track)
    refused = [e for e in ordered if e.get("figures") is None]
    for e in ordered:
        fig = e.get("figures")
        if fig is None:
            continue
        top = fig[track["headline"]]
        cls = {"best": "best", "tied with best": "tied"}.get(top["standing"], "")
        cells = [str(top["position"]), _fmt(e["name"]), e["source"], str(top["n"])]
        for m in measures:
            f = fig[m]
            interval = (
                f"<span class='ci'>[{_fmt(f['ci_low'])}, {_fmt(f['ci_high'])}]</span>"
                if f["ci_low"] is not None
                else f"<span class='ci'>none{refusals.mark(f['ci_note'])}</span>"
                if f.get("ci_note")
                else ""
            )
            mean = _fmt(f["mean"]) + (f" (n {f['n']})" if m != track["headline"] and f["mean"] is not None else "")
            cells += [mean, interval]
            if judged[m]:
                cells.append(
                    f"{label(track, f['judged_measure'])} {_fmt(f['judged_mean'])} (n {f['judged_n']})"
                    if f.get("judged_measure")
                    else ""
                )
            if held_out:
                held = _fmt(f["mean_held_out"]) + (f" (n {f['n_held_out']})" if f["n_held_out"] is not None else "")
                gap = (
                    f"{html_page.signed(f['gap'])} (n {f['n']} vs {f['n_held_out']})"
                    if f["gap"] is not None
                    else f"no gap{refusals.mark(f['gap_note'])}"
                    if f.get("gap_note")
                    else ""
                )
                cells += [held, gap, html_page.p_value(f["p_gap"])]
        standing = html.escape(top["standing"])
        if top["p_vs_best"] is not None:
            standing += (
                f" (p {html_page.p_value(top['p_vs_best'])}, "
                f"{_count(top['n_shared_with_best'], track['unit'])} shared with best)"
            )
        cells.append(standing)
        rows.append(f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    rows += _refusals(refused, len(head))
    table = (
        "<div class='scroll'><table><thead><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
        + refusals.note()
    )
    test = track.get("standings", {}).get(track["headline"], {})
    if test.get("entries_tested", 0) > 1:
        reach = (
            f" With {test['entries_tested']} entries on {html_page.plural(test['units'], html.escape(test['unit']) + ' unit')} and "
            f"{test['resamples']} resamples, the smallest p the test can attain is {test['smallest_attainable_p']:.3g}"
            + (
                "."
                if test["separable"]
                else " &gt;= alpha: <strong>no entry can be placed below the best at this n</strong>; "
                "the entries marked &#8220;not separable at this n&#8221; are not shown to be tied, only untested."
            )
        )
    else:
        reach = ""
    note = (
        f'<p class="note">Shaded: the best entry on {html.escape(names[track["headline"]])} (highest mean) and the '
        "entries tied with it: a step-down range permutation test (every unit&#8217;s values shuffled among the "
        f"entries; the lowest entry leaves while p &lt; {alpha}) does not separate them; &#8220;below best&#8221; "
        "entries it does. Rows are listed by mean; that order is not a finding between shaded entries."
        + reach
        + " leaderboard.json also holds every two entries&#8217; paired tests, Holm across every pair of this "
        "board (a descriptive matrix; the standings come from the test above). "
        f"n: {track['unit']} with a value (beside each other measure, its own n)"
        + (
            "; Judged: label coverage of the same top k (Judged@k), over n with a Judged value"
            if any(judged.values())
            else ""
        )
        + ("; held out: the held-out part&#8217;s mean over its n, gap = public - held out" if held_out else "")
        + (f". {html.escape(describe)}" if describe else "")
        + ".</p>"
    )
    return table + note if track["entries"] else "<p>No entry on this track: nothing was scored on it.</p>"


def _tracks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The tracks, each with the benchmark's measure labels at hand."""
    return [{**t, "measure_labels": doc.get("measure_labels") or {}} for t in doc["tracks"]]


def page(title: str, doc: dict[str, Any], banners: list[str] | None = None) -> str:
    held = doc.get("held_out") is not None
    intro = (
        "<p>"
        + html.escape(doc["statistics"])
        + "</p>"
        + (f"<p>{html.escape(doc['held_out_note'])}</p>" if held else "")
    )
    described = {t: m for t, m in doc["measures"].items() if isinstance(m, str)}  # mamabench: what score means
    sections = [("About", intro)]
    refusals = html_page.Refusals()  # the page's: each reason written out once
    headline = headline_figures(doc, refusals)
    top = refusals.headline_note()
    for t in _tracks(doc):
        body = track_section(t, doc["alpha"], held, described.get(t["track"]), refusals)
        if any(e.get("figures") for e in t["entries"]):
            stem = f"{MANUSCRIPT}/{_stem(doc, t)}"
            body = (
                f"<img src='{stem}_forest.png' alt='Forest plot of the {html.escape(track_label(t['track']))} track'>"
                + body
                + f"<p class='note'>For a manuscript: <a href='{stem}.tex'>LaTeX table</a>, "
                f"<a href='{stem}.csv'>CSV</a>, forest plot as <a href='{stem}_forest.svg'>SVG</a> and "
                f"<a href='{stem}_forest.pdf'>PDF</a>.</p>"
            )
        sections.append((f"{doc['benchmark']}: {track_label(t['track'])} track", body))
    body = [f"<section><h2>{html.escape(h)}</h2>{b}</section>" for h, b in sections]
    return html_page.page(title, body, headline, banners=banners or doc.get("banners") or (), headline_note=top)


def headline_figures(doc: dict[str, Any], refusals: html_page.Refusals | None = None) -> list[tuple[str, str]]:
    """Per track: the best entries on its headline measure (mean, interval or the mark of why none, n) and how many
    others are tied with them, out of how many entries (the figures the reports index shows)."""
    refusals = html_page.Refusals() if refusals is None else refusals
    out = []
    for t in _tracks(doc):
        tops = [(e["name"], e["figures"][t["headline"]]) for e in t["entries"] if e.get("figures")]
        best = [(name, f) for name, f in tops if f["standing"] == "best"]
        entries = html_page.plural(len(t["entries"]), "entry", "entries")
        if not best:
            out.append((track_label(t["track"]), f"no entry scored ({entries})"))
            continue
        count = {s: sum(f["standing"] == s for _, f in tops) for s in ("tied with best", "below best")}
        names = "; ".join(f"{name} {_mean_interval(f, refusals)} over {_count(f['n'], t['unit'])}" for name, f in best)
        reach = t.get("standings", {}).get(t["headline"], {})
        tail = (
            f"{count['tied with best']} tied with best, {count['below best']} below best"
            if reach.get("separable") or len(tops) < 2
            else "too few units to separate any entry"
        )
        ci = " (95% CI)" if any(f["ci_low"] is not None for _, f in best) else ""
        out.append((f"{track_label(t['track'])}: best on {label(t, t['headline'])}{ci}", f"{names}; {tail}; {entries}"))
    return out


def _mean_interval(f: dict[str, Any], refusals: html_page.Refusals) -> str:
    """``mean [low, high]``, or the mean with the mark of why its interval is refused."""
    if f["ci_low"] is None and f.get("ci_note"):
        return refusals.figure(f["mean"], f["ci_note"])
    return html_page.interval(f["mean"], f["ci_low"], f["ci_high"])


def _stem(doc: dict[str, Any], track: dict[str, Any]) -> str:
    return f"{doc['benchmark']}_{track['track']}"


def manuscript_files(doc: dict[str, Any]) -> dict[str, bytes]:
    """Per track with a scored entry: its table as LaTeX and CSV, its forest plot as PNG, SVG and PDF."""
    files: dict[str, bytes] = {}
    for t in _tracks(doc):
        scored = [e for e in _ordered(t) if e.get("figures")]
        if not scored:
            continue
        stem = f"{MANUSCRIPT}/{_stem(doc, t)}"
        rows, marks = [], {}
        for e in scored:
            row = {"entry": e["name"], "source": e["source"]}
            for m in t["measures"]:
                f = e["figures"][m]
                lab = label(t, m)
                row |= {f"{lab} mean": f["mean"], f"{lab} low": f["ci_low"], f"{lab} high": f["ci_high"]}
                row[f"{lab} n"] = f["n"]
            row["standing"] = e["figures"][t["headline"]]["standing"]
            rows.append(row)
        top = [e["figures"][t["headline"]] for e in scored]
        for i, mark in best_and_tied([f["mean"] for f in top], [f["standing"] == TIED_WITH_BEST for f in top]).items():
            marks[i, "entry"] = mark
            if mark == BEST:  # its headline figure in bold too
                marks[i, label(t, t["headline"])] = BEST
        data = pl.DataFrame(rows)
        refused = html_page.Refusals()  # a figure without its interval: a mark, the reason in the caption
        shown = pl.DataFrame(
            [
                {
                    "entry": e["name"],
                    **{label(t, m): _mean_interval(e["figures"][m], refused) for m in t["measures"]},
                    f"n {t['unit']}": e["figures"][t["headline"]]["n"],
                }
                for e in scored
            ]
        )
        caption = (
            f"{doc['benchmark']} leaderboard, {track_label(t['track'])} track: mean over the {t['unit']} each entry has a value "
            f"for (n), with {doc['statistics']}"
        )
        caption += "".join(f" {line}." for line in refused.lines())
        files |= {
            f"{MANUSCRIPT}/{name}": data
            for name, data in table_files([ExportTable(_stem(doc, t), data, caption, shown, marks)]).items()
        }
        files |= {f"{stem}_forest.{ext}": data for ext, data in _forest(t, scored).items()}
    return files


def _forest(track: dict[str, Any], scored: list[dict[str, Any]]) -> dict[str, bytes]:
    """Entries on one axis (table order, best at the top), each mean with its interval on the headline measure;
    the best filled dark, the entries tied with it filled light, the others hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    headline = track["headline"]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(scored) + 1.4))
    style = {BEST: ("#1b7837", "best"), TIED_WITH_BEST: ("#a6dba0", "tied with best")}
    shown = set()
    for y, e in enumerate(scored):
        f = e["figures"][headline]
        color, name = style.get(f["standing"], ("white", "other"))
        if f["ci_low"] is not None:
            ax.plot([f["ci_low"], f["ci_high"]], [y, y], color="black", linewidth=1.2)
        ax.plot(
            [f["mean"]],
            [y],
            "o",
            markersize=8,
            markerfacecolor=color,
            markeredgecolor="black",
            label=name if name not in shown else None,
        )
        shown.add(name)
        ax.annotate(
            f"n={f['n']}",
            (1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize="x-small",
        )
    ax.set_yticks(range(len(scored)), [e["name"] for e in scored])
    ax.invert_yaxis()
    drawn = "mean, 95% CI" if any(e["figures"][headline]["ci_low"] is not None for e in scored) else "mean; no interval"
    ax.set_xlabel(f"{label(track, headline)} ({drawn})")  # the interval named only where one is drawn
    ax.grid(axis="x", color="#ddd")
    ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)
    return figure_bytes(fig)


def folder_files(
    benchmark: str,
    measures_of: dict[str, list[str]],
    entries: pl.DataFrame,
    comparisons: pl.DataFrame,
    per_query: pl.DataFrame,
    facts: dict[str, Any],
) -> dict[str, bytes]:
    """Every file of the benchmark's leaderboard folder, relative path -> bytes."""
    doc, files = leaderboard_json(benchmark, measures_of, entries, comparisons, per_query, facts)
    files[JSON_FILE] = (json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()
    files[PAGE_FILE] = page(f"{benchmark} leaderboard", doc).encode()
    files |= manuscript_files(doc)
    return dict(sorted(files.items()))
