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
from mama_pipeline.evaluation.per_query_files import SAFE_NAME

PER_QUERY_HEADER = "query_id\tmeasure\tvalue\n"
JSON_FILE, PAGE_FILE = "leaderboard.json", "leaderboard.html"
ENTRY_FIELDS = (
    "position",
    "n",
    "mean",
    "ci_low",
    "ci_high",
    "judged_measure",
    "judged_n",
    "judged_mean",
    "standing",
    "n_shared_with_best",
    "p_holm_vs_best",
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
)
UNITS = {
    "main": "queries",
    "robustness": "query variants",
    "multipassage": "questions",
    "mcq": "items",
    "short_answer": "items",
    "rubric": "items",
}


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


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return ""
    return f"{v:.{digits}f}" if isinstance(v, float) else html.escape(str(v))


def track_section(track: dict[str, Any], alpha: float, held_out: bool, describe: str | None = None) -> str:
    """One track's table (headline measure and the others, intervals, Judged@k, standing) and its notes."""
    measures = track["measures"]
    head = ["#", "entry", "source", f"n {track['unit']}"]
    judged = {
        m: any((e.get("figures") or {}).get(m, {}).get("judged_measure") for e in track["entries"]) for m in measures
    }
    for m in measures:
        head += [m, "95% CI"] + (["Judged"] if judged[m] else [])
        if held_out:
            head += [f"{m} held out", "gap", "p gap"]
    head.append(f"standing on {track['headline']}")
    rows = []
    ordered = sorted(
        track["entries"],
        key=lambda e: ((e.get("figures") or {}).get(track["headline"], {}).get("position") or 10**6, e["entry_id"]),
    )
    for e in ordered:
        fig = e.get("figures")
        if fig is None:
            rows.append(
                f'<tr class="refused"><td></td><td>{_fmt(e["name"])}</td><td>{e["source"]}</td>'
                f'<td colspan="{len(head) - 3}">refused: {_fmt(e["refused"])}</td></tr>'
            )
            continue
        top = fig[track["headline"]]
        cls = {"best": "best", "tied with best": "tied"}.get(top["standing"], "")
        cells = [str(top["position"]), _fmt(e["name"]), e["source"], str(top["n"])]
        for m in measures:
            f = fig[m]
            interval = f"[{_fmt(f['ci_low'])}, {_fmt(f['ci_high'])}]" if f["ci_low"] is not None else ""
            cells += [_fmt(f["mean"]), interval]
            if judged[m]:
                cells.append(f"{f['judged_measure']} {_fmt(f['judged_mean'])}" if f.get("judged_measure") else "")
            if held_out:
                cells += [_fmt(f["mean_held_out"]), _fmt(f["gap"]), _fmt(f["p_gap"])]
        standing = top["standing"]
        if top["p_holm_vs_best"] is not None:
            standing += f" (Holm p {top['p_holm_vs_best']:.3g}, {top['n_shared_with_best']} shared)"
        cells.append(_fmt(standing))
        rows.append(f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    table = (
        "<table><thead><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    note = (
        f'<p class="note">Shaded: the best entries on {html.escape(track["headline"])} and the entries tied '
        f"with them (Holm-adjusted paired randomization p &gt;= {alpha} against the best on the {track['unit']} "
        "both "
        "have, Holm across every pair of this board): the data do not order the shaded entries. Rows are listed "
        "by mean; that order is not a finding between two entries whose own test (leaderboard.json, every pair "
        f"with its n shared) is not significant. n: {track['unit']} with a value"
        + ("; Judged: label coverage of the same top k (Judged@k)" if any(judged.values()) else "")
        + (f". {html.escape(describe)}" if describe else "")
        + ".</p>"
    )
    return table + note if track["entries"] else "<p>No entry on this track: nothing was scored on it.</p>"


def page(title: str, doc: dict[str, Any]) -> str:
    held = doc.get("held_out") is not None
    intro = (
        "<p>"
        + html.escape(doc["statistics"])
        + "</p>"
        + (f"<p>{html.escape(doc['held_out_note'])}</p>" if held else "")
    )
    described = {t: m for t, m in doc["measures"].items() if isinstance(m, str)}  # mamabench: what score means
    sections = [("About", intro)] + [
        (f"{doc['benchmark']}: {t['track']}", track_section(t, doc["alpha"], held, described.get(t["track"])))
        for t in doc["tracks"]
    ]
    body = [f"<section><h2>{html.escape(h)}</h2>{b}</section>" for h, b in sections]
    return html_page.page(title, body, headline_figures(doc))


def headline_figures(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Per track: the best entries on its headline measure and how many others are tied with them, out of how
    many entries (the figures the reports index shows)."""
    out = []
    for t in doc["tracks"]:
        tops = [(e["name"], e["figures"][t["headline"]]) for e in t["entries"] if e.get("figures")]
        best = [(name, f) for name, f in tops if f["standing"] == "best"]
        if not best:
            out.append((f"{t['track']}", f"no entry scored ({len(t['entries'])} entries)"))
            continue
        tied = sum(f["standing"] == "tied with best" for _, f in tops)
        names = ", ".join(f"{name} {html_page.number(f['mean'])} (n {f['n']})" for name, f in best)
        out.append(
            (f"{t['track']}: best on {t['headline']}", f"{names}; {tied} tied with best; {len(t['entries'])} entries")
        )
    return out


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
    return dict(sorted(files.items()))
