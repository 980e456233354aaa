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
_BANNER = re.compile(r"<div class='banner' role='note'><b>(.*?)</b></div>")
STYLESHEET = """body{font-family:sans-serif;margin:2em auto;max-width:80em;padding:0 1em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;font-size:90%}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}caption{text-align:left;font-weight:bold}
table.facts td{text-align:left}.sig{font-weight:bold}.note{color:#555}.warn{color:#a00}img{max-width:100%}
details{margin:1em 0}tr.best td,tr.tied td{background:#e6f4e6}tr.refused td{color:#888}
td,th{overflow-wrap:break-word}.ci{white-space:nowrap}.scroll{overflow-x:auto;max-width:100%}nav{margin:0 0 1em}
.banner{border:2px solid #a00;background:#fff3f3;color:#600;padding:.5em 1em;margin:1em 0}"""
INDEX_LINK = "../index.html"  # every page lies one folder below the reports index
HEADINGS = {
    "len": "count",
    "n": "n",
    "n_queries": "queries",
    "n_items": "items",
    "ci_low": "CI low",
    "ci_high": "CI high",
    "p_holm": "Holm p",
    "p_randomization": "randomization p",
    "p_randomization_holm": "randomization p (Holm)",
    "p_mcnemar": "McNemar p",
    "p_mcnemar_holm": "McNemar p (Holm)",
    "p_gap": "gap p",
}


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
    return _unsigned_zero(_half_up(v, 3 if abs(v) <= 1 else 2))


def _half_up(v: float, places: int) -> str:
    """``v`` to ``places`` decimals, halves rounded up, after dropping float noise beyond 12 significant digits:
    one quantity computed two ways (3/80 summed over pairs, or the mean of per-query 1/20, 2/20, 0, 0) reads the
    same, 0.038, where binary floats would round one down and the other up."""
    from decimal import ROUND_HALF_UP, Decimal

    return f"{Decimal(f'{v:.12g}').quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):f}"


def _unsigned_zero(text: str) -> str:
    """``-0.000`` (a negative value that rounds to zero) reads as ``0.000``."""
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def signed(v: float) -> str:
    """A difference with its sign, three decimals: ``+0.125``, ``-0.031``, ``0.000`` (no sign on zero)."""
    text = f"{v:+.3f}"
    return "0.000" if not text.strip("+-0.") else text


def interval(mean: float | None, low: float | None, high: float | None, n: int | None = None) -> str:
    """``0.412 [0.350, 0.470] n=40``: a mean with its interval (and its n), each at :func:`number`'s precision;
    ``n/a`` parts for an undefined bound."""
    text = number(mean) if mean is not None else "n/a"
    if low is not None or high is not None:
        text += f" [{number(low) if low is not None else 'n/a'}, {number(high) if high is not None else 'n/a'}]"
    return text + (f" n={n}" if n is not None else "")


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 query``, ``2 queries``: a count with its noun in the right number (``nouns``: the irregular plural)."""
    if n == 1:
        return f"{n} {noun}"
    many = nouns or (noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s")
    return f"{n} {many}"


def heading(column: str) -> str:
    """A column name as a reader's heading: known internal names replaced, underscores as spaces."""
    return HEADINGS.get(column, column.replace("_", " "))


def p_value(p: float | None) -> str:
    """A p-value: three decimals, ``< 0.001`` below that."""
    if p is None:
        return ""
    if math.isnan(p):
        return "n/a"
    return "&lt; 0.001" if p < 0.001 else f"{p:.3f}"


def cell(v: object, column: str = "") -> str:
    """One table cell's HTML: p-value columns (``p``, ``p_*``) by :func:`p_value`, booleans as yes/no, numbers by
    :func:`number`, lists joined by commas, anything else escaped."""
    if isinstance(v, float) and (column == "p" or column.startswith("p_")):
        return p_value(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
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
    head = "".join(f"<th>{esc(heading(c))}</th>" for c in df.columns)
    rows = []
    for i, row in enumerate(df.iter_rows()):
        cls = " class='sig'" if bold is not None and bold[i] else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{cell(v, c)}</td>" for v, c in zip(row, df.columns)) + "</tr>")
    top = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<div class='scroll'><table>{top}<tr>{head}</tr>{''.join(rows)}</table></div>"


def page(
    title: str,
    body: Iterable[str],
    headline: Sequence[tuple[str, str]] = (),
    heading: str | None = None,
    banners: Sequence[str] = (),
    index_link: str | None = INDEX_LINK,
) -> str:
    """A whole page: the shared stylesheet, a link back to the reports index (``index_link``; None on the index
    itself), ``heading`` (default: the title) as its ``h1``, each of ``banners`` (what the reader must know before
    reading any figure: an embedded smoke-test model, synthetic labels) in a box, the ``headline`` figures (label,
    text that states its denominator) in a table, then ``body``."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in headline)
    return "\n".join(
        [
            f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
            f"<style>{STYLESHEET}</style></head><body>",
            *([f"<nav><a href='{esc(index_link)}'>&larr; All reports</a></nav>"] if index_link else []),
            f"<h1>{esc(heading or title)}</h1>",
            *(f"<div class='banner' role='note'><b>{esc(b)}</b></div>" for b in dict.fromkeys(banners)),
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


def banners_of(page_html: str) -> list[str]:
    """The banners a page written by :func:`page` shows (none when it shows none)."""
    return [html.unescape(b) for b in _BANNER.findall(page_html)]
