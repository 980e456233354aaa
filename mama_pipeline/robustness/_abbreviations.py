"""The reviewed clinical-shorthand table and its application to a query.

Each long form is replaced, as a whole word and case-insensitively, by its short
form; at each position the longest matching long form wins. A query's shorthand
variant depends only on the entries whose long form occurs in it, so editing the
table changes only the variants it touches.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from mama_pipeline.common.input_errors import InputError, read_text

BUNDLED_TABLE = Path(__file__).resolve().parent / "abbreviations.tsv"
HEADER = ["long_form", "short_form"]


class AbbreviationTableError(InputError):
    """A table line that cannot be used, named by file and line."""


@dataclass(frozen=True)
class AbbreviationTable:
    path: str
    sha256: str
    entries: tuple[tuple[str, str], ...]  # (long form, short form), in file order

    def apply(self, text: str) -> tuple[str, list[str]]:
        """``text`` in shorthand, and the entries applied ("long -> short"), in order of occurrence."""
        if not self.entries:
            return text, []
        short = {long.casefold(): s for long, s in self.entries}
        applied: list[str] = []

        def swap(m: re.Match[str]) -> str:
            long = m.group(0).casefold()
            applied.append(f"{long} -> {short[long]}")
            return short[long]

        return _pattern(self.entries).sub(swap, text), applied


def _pattern(entries: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    longs = sorted({long for long, _ in entries}, key=lambda s: (-len(s), s.casefold()))
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(s) for s in longs) + r")(?!\w)", re.IGNORECASE)


def load_table(path: str | Path | None = None) -> AbbreviationTable:
    """Read and check a UTF-8 table: two tab-separated fields per line, no empty or repeated long form."""
    path = Path(path) if path else BUNDLED_TABLE
    text = read_text(path, "abbreviation table")  # a missing file or a byte that is not UTF-8: one line, named
    entries: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    header_seen = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        fields = raw.split("\t")
        if not header_seen:
            if [f.strip() for f in fields] != HEADER:
                raise AbbreviationTableError(f"{path}:{lineno}: expected the header 'long_form<TAB>short_form'")
            header_seen = True
            continue
        if len(fields) != 2:
            raise AbbreviationTableError(f"{path}:{lineno}: expected 2 tab-separated fields, found {len(fields)}")
        long, short = (f.strip() for f in fields)
        if not long or not short:
            raise AbbreviationTableError(f"{path}:{lineno}: empty long or short form")
        if long.casefold() == short.casefold():
            raise AbbreviationTableError(f"{path}:{lineno}: short form {short!r} equals its long form")
        if long.casefold() in seen:
            raise AbbreviationTableError(
                f"{path}:{lineno}: long form {long!r} already given on line {seen[long.casefold()]}"
            )
        seen[long.casefold()] = lineno
        entries.append((long, short))
    if not header_seen:
        raise AbbreviationTableError(f"{path}: no header line 'long_form<TAB>short_form'")
    # valid UTF-8 decodes and re-encodes to the same bytes: this is the file's hash
    return AbbreviationTable(str(path), hashlib.sha256(text.encode("utf-8")).hexdigest(), tuple(entries))
