"""The one HTML page scaffold of the reports: one stylesheet, one table renderer, numbers at a reader's precision.

Each report page is written with :func:`page`, its headline figures in a table at the top, which the reports
index (``data/reports/index.html``) reads back with :func:`headline_of`. Output is deterministic: fixed formats,
no clock reading.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence

import polars as pl

HEADLINE_TABLE = "<table class='facts' id='headline'>"
_ROW = re.compile(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>")
STYLESHEET = """body{font-family:sans-serif;margin:2em auto;max-width:80em;padding:0 1em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;font-size:90%}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}caption{text-align:left;font-weight:bold}
table.facts td{text-align:left}.sig{font-weight:bold}.note{color:#555}.warn{color:#a00}img{max-width:100%}
details{margin:1em 0}tr.best td,tr.tied td{background:#e6f4e6}tr.refused td{color:#888}"""


def esc(value: object) -> str:
    """Text for HTML (quotes escaped too)."""
    return html.escape("" if value is None else str(value), quote=True)


def number(v: float | int | None) -> str:
    """A figure as a reader wants it: counts whole, values within [-1, 1] (means, shares, differences) to three
    decimals, larger values to two decimals (or whole when whole); ``n/a`` for NaN."""
    if v is None:
        return ""
    if isinstance(v, bool) or isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v) or abs(v) > 1 and v.is_integer():
        return f"{v:.0f}"
    return f"{v:.3f}" if abs(v) <= 1 else f"{v:.2f}"


def p_value(p: float | None) -> str:
    """A p-value: three decimals, ``< 0.001`` below that."""
    if p is None:
        return ""
    if math.isnan(p):
        return "n/a"
    return "&lt; 0.001" if p < 0.001 else f"{p:.3f}"


def cell(v: object, column: str = "") -> str:
    """One table cell's HTML: p-value columns (``p``, ``p_*``) by :func:`p_value`, numbers by :func:`number`,
    lists joined by commas, anything else escaped."""
    if isinstance(v, float) and (column == "p" or column.startswith("p_")):
        return p_value(v)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return number(v)
    if isinstance(v, list):
        return esc(", ".join(map(str, v)))
    return esc(v)


def table(
    df: pl.DataFrame, caption: str | None = None, bold: Sequence[bool] | None = None, empty: str | None = None
) -> str:
    """A data frame as an HTML table; ``bold`` marks rows (class ``sig``); ``empty`` (when given) stands for a
    frame without rows."""
    if empty is not None and df.is_empty():
        return f"<p>{esc(empty)}</p>"
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    rows = []
    for i, row in enumerate(df.iter_rows()):
        cls = " class='sig'" if bold is not None and bold[i] else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{cell(v, c)}</td>" for v, c in zip(row, df.columns)) + "</tr>")
    top = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<table>{top}<tr>{head}</tr>{''.join(rows)}</table>"


def page(title: str, body: Iterable[str], headline: Sequence[tuple[str, str]] = (), heading: str | None = None) -> str:
    """A whole page: the shared stylesheet, ``heading`` (default: the title) as its ``h1``, the ``headline``
    figures (label, text that states its denominator) in a table, then ``body``."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in headline)
    return "\n".join(
        [
            f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
            f"<style>{STYLESHEET}</style></head><body><h1>{esc(heading or title)}</h1>",
            *([f"{HEADLINE_TABLE}{rows}</table>"] if rows else []),
            *body,
            "</body></html>\n",
        ]
    )


def headline_of(page_html: str) -> list[tuple[str, str]]:
    """The headline figures a page written by :func:`page` shows at its top (none when it shows none)."""
    start = page_html.find(HEADLINE_TABLE)
    if start < 0:
        return []
    block = page_html[start : page_html.index("</table>", start)]
    return [(html.unescape(k), html.unescape(v)) for k, v in _ROW.findall(block)]
