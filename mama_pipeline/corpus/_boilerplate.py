"""Rules that reject chunks no clinical query should be written from.

Checked in this order; the first that applies is the chunk's reason:

- ``front_matter``: a heading of acknowledgements or copyright, or a body that
  carries an ISBN, a copyright line, "all rights reserved" or cataloguing data;
- ``heading_references`` / ``heading_contents`` / ``heading_objectives`` /
  ``heading_foreword``: a breadcrumb level, or the body's first line, is such a
  heading (numbering, ``#`` marks and a trailing colon ignored);
- ``empty_form_table``: the body is mostly a table whose cells are mostly empty,
  or mostly fill-in lines of underscores;
- ``short_body``: fewer than ``min_words`` words in the body.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice

HEADING_RULES = [
    ("front_matter", r"acknowledge?ments?|copyright(?: page| notice)?|publication data"),
    ("heading_references", r"references?|reference list|bibliography|(?:further|suggested) reading"),
    ("heading_contents", r"(?:table of )?contents|index"),
    (
        "heading_objectives",
        r"(?:(?:learning|session|module|unit|chapter|course|lesson) )?objectives"
        r"(?: (?:of|for) (?:this|the) (?:module|session|unit|chapter|lesson|course))?",
    ),
    ("heading_foreword", r"foreword|preface"),
]
_HEADING_RES = [(reason, re.compile(pattern)) for reason, pattern in HEADING_RULES]
_NUMBERING_RE = re.compile(
    r"^(?:(?:chapter|section|unit|module|part|session)\s+)?(?:[0-9]+(?:\.[0-9]+)*|[ivx]+)[.:)]?\s+", re.I
)
_FRONT_MATTER_RE = re.compile(
    r"\bISBN\b|©|\(c\)\s*(?:19|20)\d\d|\bcopyright\s+(?:©\s*)?(?:19|20)\d\d|all rights reserved"
    r"|cataloguing[- ]in[- ]publication|library of congress",
    re.I,
)
_WORD_RE = re.compile(r"\w+")
_FILL_IN_RE = re.compile(r"_{4,}")
_TABLE_RULE_RE = re.compile(r"^[\s:|]*-[\s:|-]*$")

FORM_TABLE_SHARE = 0.5  # table (or fill-in) lines among non-blank lines
EMPTY_CELL_SHARE = 0.6  # empty cells among body-row cells


def normalise_heading(line: str) -> str:
    """A heading without markdown marks, numbering, trailing punctuation or case."""
    text = line.strip().lstrip("#>").strip()
    text = _NUMBERING_RE.sub("", text)
    text = text.rstrip(" :.-").replace("*", "")
    return " ".join(text.casefold().split())


@lru_cache(maxsize=2**16)  # a breadcrumb level repeats over its section's chunks: each checked once
def heading_reason(heading: str) -> str | None:
    norm = normalise_heading(heading)
    for reason, pattern in _HEADING_RES:
        if pattern.fullmatch(norm):
            return reason
    return None


def body_lines(text: str) -> list[str]:
    """Non-blank lines of a chunk text, without leading breadcrumb lines."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    start = 0
    while start < len(lines) and lines[start].lstrip().startswith(">"):
        start += 1
    return lines[start:]


def _is_empty_form(lines: list[str]) -> bool:
    if not lines:
        return False
    if sum(bool(_FILL_IN_RE.search(ln)) for ln in lines) / len(lines) >= FORM_TABLE_SHARE:
        return True
    table = [ln.strip() for ln in lines if ln.strip().startswith("|")]
    if len(table) < 3 or len(table) / len(lines) < FORM_TABLE_SHARE:
        return False
    rows = [ln for ln in table if not _TABLE_RULE_RE.match(ln)][1:]  # drop rules and the header row
    cells = [c.strip(" _.-") for row in rows for c in row.strip("|").split("|")]
    return bool(cells) and sum(not c for c in cells) / len(cells) >= EMPTY_CELL_SHARE


def boilerplate_reason(text: str, breadcrumb: list[str], min_words: int) -> str | None:
    """Why a chunk is boilerplate, or None when it may be sampled."""
    lines = body_lines(text)
    headings = list(breadcrumb) + lines[:1]
    reasons = [r for r in (heading_reason(h) for h in headings) if r is not None]
    if "front_matter" in reasons or _FRONT_MATTER_RE.search(text):
        return "front_matter"
    if reasons:
        return reasons[0]
    if _is_empty_form(lines):
        return "empty_form_table"
    if sum(1 for _ in islice(_WORD_RE.finditer("\n".join(lines)), min_words)) < min_words:  # stops at min_words
        return "short_body"
    return None
