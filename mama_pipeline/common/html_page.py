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
HEADLINE_REFUSALS_ID = "headline-refusals"
HEADLINE_REFUSALS = f"<p class='note refusals' id='{HEADLINE_REFUSALS_ID}'>"
_ROW = re.compile(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>")
_BANNER = re.compile(r"<div class='banner' role='note'><b>(.*?)</b></div>")
_MARKS = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"  # superscript 0-9
MARK = re.compile(f"[{_MARKS}]+")  # a footnote mark of :class:`Refusals`
MARK_DIGITS = str.maketrans(_MARKS, "0123456789")
_REFUSAL = re.compile(
    f"<span class='refusal'>(?P<mark>[{_MARKS}]+) (?:(?P<what>\\S+) )?refused for \\d+ [^:<]*: (?P<reason>.*?)</span>"
)
_OWN_VALUE = re.compile(r" \(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?\)")
_OWN_COUNT = re.compile(r"(^|: )\d+ ([a-z]+?)s?, fewer than the (\d+) ")
_NAMED = re.compile(r"; [A-Za-z]+: ")  # a second refusal in one reason ("interval: ...; randomization: ...")
_PARTS = re.compile(r"; (?=[A-Za-z]+: )")
REFUSAL_COLUMNS = ("refused",)  # a table column holding why a row's figure is missing
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


class Refusals:
    """The refused figures of one page: each cell shows a short footnote mark (the same mark for the same reason all
    over the page), each distinct reason is written out once, in the note below the first table that uses it
    (``¹ interval refused for 37 cells: 4 values, fewer than the 30 a bootstrap interval needs``); a later table's
    note only counts its cells (``¹ interval refused for 6 cells (reason above)``)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}  # (what, reason) -> cells marked, all over the page
        self._since: dict[tuple[str, str], int] = {}  # the same, since the last note
        self._explained: set[tuple[str, str]] = set()

    def mark(self, reason: str, what: str = "") -> str:
        """The footnote mark of ``reason`` (``what`` was refused: interval, test, figure; empty when the reason says
        it), counting one more cell refused for it."""
        key = _key(reason, what)
        self.counts[key] = self.counts.get(key, 0) + 1
        self._since[key] = self._since.get(key, 0) + 1
        return _mark_of(list(self.counts).index(key))

    def missing(self, reason: str) -> str:
        """What a reason says was refused, with its mark: ``no interval¹``, ``no randomization p²``, ``refused³``; a
        reason joining several (``interval: ...; randomization: ...``) a mark for each."""
        out = []
        for part in _PARTS.split(reason):
            what = _key(part, "")[0]
            shown = "refused" if not what else "no interval" if what == "interval" else f"no {what} p"
            out.append(shown + self.mark(part))
        return ", ".join(out)

    def figure(self, mean: float | None, reason: str, n: int | None = None) -> str:
        """``0.412 (no interval¹) n=40``: a mean whose interval is refused, the reason left to the note (of a reason
        joining several, its interval's part)."""
        parts = _PARTS.split(reason)
        why = next((p for p in parts if _key(p, "")[0] == "interval"), reason)
        return f"{number(mean)} (no interval{self.mark(why)})" + (f" n={n}" if n is not None else "")

    def lines(self, unit: str = "cell") -> list[str]:
        """One line per distinct reason over the whole page: its mark, what was refused, for how many cells, why
        (a manuscript table's caption)."""
        return [self._line(key, n, unit) for key, n in self.counts.items()]

    def note(self, element_id: str = "", unit: str = "cell") -> str:
        """HTML below a table: a line per reason marked since the last note, the reason written out the first time
        (empty without a refusal); :func:`headline_refusals_of` reads back those of a page's headline."""
        if not self._since:
            return ""
        spans = []
        for key, n in self._since.items():
            line = self._line(key, n, unit)
            if key in self._explained:
                line = f"{line.split(': ', 1)[0]} (reason above)"
            spans.append(f"<span class='refusal'>{esc(line)}</span>")
        self._explained |= set(self._since)
        self._since = {}
        ident = f" id='{esc(element_id)}'" if element_id else ""
        return f"<p class='note refusals'{ident}>{'<br>'.join(spans)}</p>"

    def headline_note(self) -> str:
        """The note under a page's headline figures (what the reports index reads back)."""
        return self.note(HEADLINE_REFUSALS_ID, "figure")

    def _line(self, key: tuple[str, str], n: int, unit: str) -> str:
        what, reason = key
        return f"{_mark_of(list(self.counts).index(key))} {what + ' ' if what else ''}refused for {plural(n, unit)}: {reason}"


def _key(reason: str, what: str) -> tuple[str, str]:
    """(what was refused, why) of a reason, worded so that one reason reads once whatever the cell: a bare number in
    parentheses (the cell's own value: "all 40 values equal (0.2)") is left out, and so is a count before "fewer
    than" (the cell's own n: "4 values, fewer than the 30 ..." reads "fewer than the 30 values ...")."""
    reason = _OWN_COUNT.sub(r"\1fewer than the \3 \2s ", _OWN_VALUE.sub("", reason))
    head, colon, rest = reason.partition(": ")
    if not what and colon and head.isalpha() and not _NAMED.search(rest):  # "interval: ..." names what
        return head, rest
    return what, reason.removeprefix(f"{what}: ") if what else reason


def _mark_of(i: int) -> str:
    """The ``i``-th footnote mark (from 0): ¹, ², ... ¹⁰."""
    return "".join(_MARKS[int(d)] for d in str(i + 1))


def headline_refusals_of(page_html: str) -> dict[str, tuple[str, str]]:
    """The refusal notes under the headline of a page written by :func:`page`: mark -> (what, reason)."""
    start = page_html.find(HEADLINE_REFUSALS)
    if start < 0:
        return {}
    block = page_html[start : page_html.index("</p>", start)]
    return {hit["mark"]: (hit["what"] or "", html.unescape(hit["reason"])) for hit in _REFUSAL.finditer(block)}


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
    df: pl.DataFrame,
    caption: str | None = None,
    bold: Sequence[bool] | None = None,
    empty: str | None = None,
    refusals: Refusals | None = None,
) -> str:
    """A data frame as an HTML table; ``bold`` marks rows (class ``sig``); ``empty`` (when given) stands for a
    frame without rows. A refusal column (:data:`REFUSAL_COLUMNS`) shows a footnote mark per refused row, each
    distinct reason once below the table (``refusals``: the page's, so a reason is written out once per page)."""
    if empty is not None and df.is_empty():
        return f"<p>{esc(empty)}</p>"
    head = "".join(f"<th>{esc(heading(c))}</th>" for c in df.columns)
    refusals = Refusals() if refusals is None else refusals
    rows = []
    for i, row in enumerate(df.iter_rows()):
        cls = " class='sig'" if bold is not None and bold[i] else ""
        cells = [
            (refusals.missing(v) if v else "") if c in REFUSAL_COLUMNS else cell(v, c) for v, c in zip(row, df.columns)
        ]
        rows.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    top = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<div class='scroll'><table>{top}<tr>{head}</tr>{''.join(rows)}</table></div>{refusals.note()}"


def page(
    title: str,
    body: Iterable[str],
    headline: Sequence[tuple[str, str]] = (),
    heading: str | None = None,
    banners: Sequence[str] = (),
    index_link: str | None = INDEX_LINK,
    headline_note: str = "",
) -> str:
    """A whole page: the shared stylesheet, a link back to the reports index (``index_link``; None on the index
    itself), ``heading`` (default: the title) as its ``h1``, each of ``banners`` (what the reader must know before
    reading any figure: an embedded smoke-test model, synthetic labels) in a box, the ``headline`` figures (label,
    text that states its denominator) in a table (``headline_note``: the :meth:`Refusals.headline_note` of the
    marks its figures carry, made before the body's notes), then ``body``."""
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in headline)
    return "\n".join(
        [
            f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
            f"<style>{STYLESHEET}</style></head><body>",
            *([f"<nav><a href='{esc(index_link)}'>&larr; All reports</a></nav>"] if index_link else []),
            f"<h1>{esc(heading or title)}</h1>",
            *(f"<div class='banner' role='note'><b>{esc(b)}</b></div>" for b in dict.fromkeys(banners)),
            *([f"{HEADLINE_TABLE}{rows}</table>"] if rows else []),
            *([headline_note] if headline_note else []),
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
