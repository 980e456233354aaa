"""The one Markdown table builder: cards, dataset cards and Dagster metadata tables.

Callers differ in how a cell is written (a release card keeps what it wrote before, byte for byte), so the
differences are parameters of :class:`Cells`, not separate builders.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True)
class Cells:
    """How one cell value becomes text.

    ``none``: what a missing value shows; ``digits``: decimals of a float (None: ``str(v)``); ``pipe``: what
    replaces ``|`` in a cell (None: left as is); ``newline``: what replaces a line break (None: left as is);
    ``cut``: the most characters a cell keeps, after the replacements (None: no cut).
    """

    none: str = ""
    digits: int | None = None
    pipe: str | None = "/"
    newline: str | None = None
    cut: int | None = None

    def text(self, v: Any) -> str:
        if v is None:
            return self.none
        s = f"{v:.{self.digits}f}" if self.digits is not None and isinstance(v, float) else str(v)
        if self.pipe is not None:
            s = s.replace("|", self.pipe)
        if self.newline is not None:
            s = s.replace("\n", self.newline)
        return s if self.cut is None else s[: self.cut]


VERBATIM = Cells(pipe=None)  # values written as they are
METADATA = Cells(digits=3, newline=" ")  # Dagster metadata: three decimals, one line per row


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], cells: Cells = Cells()) -> str:
    """A Markdown table: the header as given, then one line per row (by default ``|`` in a cell becomes ``/``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cells.text(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def frame_table(df: pl.DataFrame, cells: Cells = Cells(), *, limit: int | None = None, empty: str | None = None) -> str:
    """A data frame as a Markdown table; ``empty`` (when given) stands for a frame without rows, and past
    ``limit`` rows a last line says how many more there are."""
    if empty is not None and df.is_empty():
        return empty
    shown = df if limit is None else df.head(limit)
    text = table(df.columns, shown.iter_rows(), cells)
    if limit is not None and df.height > limit:
        text += f"\n\n({df.height - limit} more rows)"
    return text
