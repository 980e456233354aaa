"""Tables and figures a manuscript can take as they are: each report table also as a LaTeX ``booktabs`` table and a
CSV file, each figure also as SVG and PDF, the files beside the page.

A table is one :class:`ExportTable`: ``data`` (the numbers, written to the CSV as they are), ``shown`` (the cells as
the page prints them, which the LaTeX table holds), the cells in bold (the best) and the cells marked tied with the
best (a dagger), and a caption that states the denominator, the resampling and the multiple-comparison correction.
The LaTeX comes from one great_tables definition (its ``as_latex``: booktabs rules); great_tables does not yet
carry styles into LaTeX, so bold is its Markdown ``**...**`` and the dagger is put in after rendering.
Output is deterministic: no dates, no software stamps, fixed SVG ids.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

BEST, TIED_WITH_BEST = "best", "tied with best"
TIED = "\u2020"  # the marker of an entry tied with the best, in a cell of ``shown``
_TIED_LATEX = r"\textsuperscript{\dag}"
FIGURE_FORMATS = ("png", "svg", "pdf")
PREAMBLE = r"""\documentclass{article}
\usepackage[T1]{fontenc}
\usepackage{booktabs}
\usepackage{caption}
\usepackage[margin=1cm,landscape]{geometry}
\pagestyle{empty}
\begin{document}
"""


@dataclass(frozen=True)
class ExportTable:
    stem: str  # file name without its extension
    data: pl.DataFrame  # the numbers (CSV)
    caption: str  # denominator, resampling, correction
    shown: pl.DataFrame | None = None  # the cells as the page prints them (LaTeX); default: ``data``
    marks: Mapping[tuple[int, str], str] = field(default_factory=dict)  # (row, column) -> BEST or TIED_WITH_BEST

    def cells(self) -> pl.DataFrame:
        from mama_pipeline.common.html_page import cell

        frame = self.shown if self.shown is not None else self.data
        return frame.select(
            pl.Series(c, [_unescape(cell(v, c)) for v in frame[c].to_list()], dtype=pl.String) for c in frame.columns
        )


def best_and_tied(means: Sequence[float | None], tied: Sequence[bool]) -> dict[int, str]:
    """The marks of one column, row -> BEST or TIED_WITH_BEST: the best is the first row with the highest mean; every
    other row is tied with it when its test says so (``tied``) or when its mean equals the best's exactly (an exact
    tie is a tie whatever the test could show)."""
    present = [m for m in means if m is not None]
    if not present:
        return {}
    top = max(present)
    best = list(means).index(top)
    out = {best: BEST}
    for i, (mean, by_test) in enumerate(zip(means, tied, strict=True)):
        if i != best and (by_test or mean == top):
            out[i] = TIED_WITH_BEST
    return out


def latex(table: ExportTable) -> str:
    """The table as LaTeX (booktabs), caption and note included, best cells bold, cells tied with them daggered."""
    from great_tables import GT

    cells = table.cells()
    unknown = {m for m in table.marks.values()} - {BEST, TIED_WITH_BEST}
    if unknown:
        raise ValueError(f"table {table.stem}: unknown marks {sorted(unknown)}")
    marked = []
    for i, row in enumerate(cells.iter_rows(named=True)):
        out = {}
        for c, v in row.items():
            mark = table.marks.get((i, c))
            text = _markdown(v)
            out[c] = f"**{text}**" if mark == BEST and v else text + (TIED if mark == TIED_WITH_BEST else "")
        marked.append(out)
    body = pl.DataFrame(marked, schema=dict.fromkeys(cells.columns, pl.String)) if marked else cells
    gt = GT(body).fmt_markdown(columns=cells.columns).tab_header(title=table.caption)
    if table.marks:
        gt = gt.tab_source_note("Bold: the best; \u2020: tied with the best.")
    return _superscripts(gt.as_latex().replace(TIED, _TIED_LATEX))


def csv(table: ExportTable) -> bytes:
    buffer = io.BytesIO()
    table.data.write_csv(buffer)
    return buffer.getvalue()


def table_files(tables: Iterable[ExportTable]) -> dict[str, bytes]:
    """``<stem>.tex`` and ``<stem>.csv`` of each table; a stem used twice is an error."""
    out: dict[str, bytes] = {}
    for t in tables:
        if f"{t.stem}.tex" in out:
            raise ValueError(f"two exported tables named {t.stem!r}")
        out[f"{t.stem}.tex"] = latex(t).encode()
        out[f"{t.stem}.csv"] = csv(t)
    return out


def write_tables(folder: Path, tables: Iterable[ExportTable]) -> list[str]:
    """Write :func:`table_files` into ``folder``; returns the file names."""
    files = table_files(tables)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return list(files)


def standalone(table_tex: str) -> str:
    """A minimal LaTeX document holding one exported table (what the compile test and a reader's preview run)."""
    return PREAMBLE + table_tex + "\n\\end{document}\n"


def save_figure(fig, png: Path, dpi: int = 100) -> str:
    """Save ``fig`` as ``png`` and beside it as SVG and PDF (no date, no software stamp); returns the PNG's name."""
    for ext, data in figure_bytes(fig, dpi).items():
        png.with_suffix(f".{ext}").write_bytes(data)
    return png.name


def figure_bytes(fig, dpi: int = 100) -> dict[str, bytes]:
    """``fig`` as PNG, SVG and PDF bytes (extension -> bytes), as :func:`save_figure` writes them."""
    import matplotlib
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = {}
    with matplotlib.rc_context({"svg.hashsalt": "mama_pipeline", "svg.fonttype": "none"}):
        for ext, meta in (
            ("png", {"Software": None}),
            ("svg", {"Date": None, "Creator": None}),
            ("pdf", {"CreationDate": None, "Creator": None, "Producer": None}),
        ):
            buffer = io.BytesIO()
            fig.savefig(buffer, format=ext, dpi=dpi, metadata=meta)
            out[ext] = buffer.getvalue()
    plt.close(fig)
    return out


def _superscripts(tex: str) -> str:
    """The pages' footnote marks (superscript digits, which pdflatex's fonts lack beyond ³) as
    ``\textsuperscript``."""
    from mama_pipeline.common.html_page import MARK, MARK_DIGITS

    return MARK.sub(lambda hit: r"\textsuperscript{" + hit.group(0).translate(MARK_DIGITS) + "}", tex)


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


def _markdown(text: str) -> str:
    """Cell text for great_tables' Markdown: characters Markdown would read as markup escaped."""
    return "".join("\\" + ch if ch in "\\`*_[]#<>|" else ch for ch in text)
