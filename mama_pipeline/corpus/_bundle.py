"""Read a corpus bundle into one row per chunk, with every problem named or counted.

Formats (chosen by file suffix):

- ``.txt`` (``chunks_for_rag.txt``): each chunk is a header line
  ``<sep>[SOURCE:<slug>|PAGE:<int>|CID:<16 hex>]`` (the five characters ``<sep>``
  are literal text), then optional breadcrumb lines starting with ``>`` (one
  section level per line, or several joined by `` > ``), then the chunk text. The
  older header without CID (``<sep>[SOURCE:<slug>|PAGE:<int>]``) is read too, the
  id then being computed; so is a header without ``<sep>`` on the line after a
  separator line (three or more of ``- = _ * # ~``). Separator and blank lines
  just before a header belong to no chunk; any other content before the first
  header is an error naming its line.
- ``.jsonl`` / ``.parquet``: one record per chunk with ``source``, ``page``,
  ``text`` (the body, without breadcrumb), optional ``chunk_id`` (or ``cid``) and
  optional ``breadcrumb`` (a list of section levels, or the breadcrumb lines as
  written, joined by newlines).

Canonical text (setting ``corpus.canonical_text``): ``body`` (default) is the
chunk text without its breadcrumb lines, stripped of leading and trailing
whitespace; ``with_breadcrumb`` is the breadcrumb lines as written followed by the
body, stripped the same way. The canonical text is what is hashed into the chunk
id and what retrieval, judging and the release use; the breadcrumb is kept as a
separate list column.

CID convention: a bundle's own CIDs are sha256 prefixes of either the body or the
breadcrumb-and-body text (the original pipeline judged the one and released the
other). The reader finds which convention the bundle follows (``body``,
``with_breadcrumb``, ``either`` when no chunk has a breadcrumb, ``none_given``
for the older header, ``neither`` when no CID matches), and always derives the
chunk id from the configured canonical text, so ids and the corpus version do not
depend on the convention. A CID that matches neither text, or that follows the
other convention than the bundle's majority, is a ``cid_mismatch``.

Bad chunks (malformed header, non-integer page, empty text, non-UTF-8 bytes, a
CID mismatch, an unreadable record) raise :class:`BundleError` naming the file
and line (row for parquet; CID mismatches with their count and examples), or,
with ``on_bad_chunk="skip"``, are dropped and listed in the issues table with
their reason. A file that is not a bundle at all fails at its first content line
in either mode. Later chunks with an already-seen id (identical canonical text)
are dropped and listed; chunks whose bodies are equal up to case and whitespace
but whose ids differ are listed as ``duplicate_text`` and kept.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl

from mama_pipeline.common.file_ops import atomic_file
from mama_pipeline.common.input_errors import InputError, one_line
from mama_pipeline.corpus._hashing import ID_HEX, chunk_id, corpus_version, text_digest
from mama_pipeline.store.table_schema import table_schema

CanonicalText = Literal["body", "with_breadcrumb"]
OnBad = Literal["fail", "skip"]

SEP = "<sep>"  # literal text at the start of every header line of the real bundle
HEADER_RE = re.compile(
    r"^(?:<sep>)?\[SOURCE:(?P<source>[^|\]]*)\|PAGE:(?P<page>[^|\]]*)(?:\|CID:(?P<cid>[^|\]]*))?\]\s*$"
)
HEADER_FORM = "<sep>[SOURCE:<slug>|PAGE:<int>|CID:<16 hex>]"
SEPARATOR_RE = re.compile(rb"^\s*([-=_*#~])\1{2,}\s*$")
SLUG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CID_RE = re.compile(r"^[0-9a-f]{16}$")
PAGE_RE = re.compile(r"^[0-9]+$")
BREADCRUMB_SPLIT_RE = re.compile(r"\s+>\s+")
LEVEL_SEP = "\x1f"  # joins breadcrumb levels while a chunk table is built
BLOCK_ROWS = 65_536  # chunks made a table at a time while the chunk table is built

REASONS = {
    "malformed_header": "malformed header",
    "bad_page": "page is not a non-negative integer",
    "empty_chunk": "empty chunk",
    "non_utf8": "bytes that are not UTF-8",
    "cid_mismatch": "CID does not match the bundle's convention",
    "bad_record": "unreadable record",
}

CHUNK_SCHEMA = table_schema("corpus_chunks", without=("corpus_version",))
ISSUE_SCHEMA = table_schema("corpus_issues")


class BundleError(InputError):
    """A bundle that cannot be read as given; the message names file and line."""


@dataclass(slots=True)  # one per chunk until the chunk table is built: no __dict__ each
class _Record:
    """One chunk as read, before validation of its text and id."""

    line: int
    source: str | None = None
    page: int | None = None
    given_cid: str | None = None
    breadcrumb_lines: list[str] = field(default_factory=list)
    body: str = ""
    problem: tuple[str, str] | None = None  # (reason, detail) found while reading


@dataclass
class ParsedBundle:
    """The chunks of a bundle (unique ids, bundle order), every issue met, and its CID convention."""

    chunks: pl.DataFrame
    issues: pl.DataFrame
    corpus_version: str
    records_read: int
    cid_convention: str = "none_given"  # body | with_breadcrumb | either | none_given | neither
    cid_matches: dict[str, int] = field(default_factory=dict)  # body | with_breadcrumb | both | neither | absent

    def counts(self) -> dict[str, int]:
        """Records read, chunks kept and issue counts keyed ``action/reason``."""
        out = {"records_read": self.records_read, "chunks": self.chunks.height}
        for action, reason, n in sorted(self.issues.group_by("action", "reason").len().rows()):
            out[f"{action}/{reason}"] = n
        return out

    def cid_metadata(self) -> dict[str, Any]:
        """The bundle's CID convention and how many given CIDs matched which text."""
        return {
            "cid_convention": self.cid_convention,
            **{f"cids_matching_{k}": v for k, v in sorted(self.cid_matches.items())},
        }


class _Issues:
    """Raise on a bad chunk, or record it when bad chunks are skipped."""

    def __init__(self, path: Path, on_bad: OnBad):
        self.path = path
        self.on_bad = on_bad
        self.rows: list[dict[str, Any]] = []

    def bad(self, rec: _Record, reason: str, detail: str, chunk: str | None = None) -> None:
        if self.on_bad == "fail":
            raise BundleError(f"{self.path}:{rec.line}: {REASONS[reason]}: {detail}")
        self.add(rec, reason, "skipped", detail, chunk)

    def add(self, rec: _Record, reason: str, action: str, detail: str, chunk: str | None = None) -> None:
        self.rows.append(
            {
                "file": self.path.name,
                "line": rec.line,
                "source": rec.source,
                "page": rec.page,
                "chunk_id": chunk,
                "given_cid": rec.given_cid,
                "reason": reason,
                "action": action,
                "detail": detail,
            }
        )


def load_bundle(path: str | Path, canonical: CanonicalText = "body", on_bad: OnBad = "fail") -> ParsedBundle:
    """Parse a bundle file (``.txt``, ``.jsonl`` or ``.parquet``) into chunks and issues."""
    path = Path(path)
    if not path.is_file():
        raise BundleError(f"{path}: corpus bundle file does not exist")
    suffix = path.suffix.lower()
    if suffix == ".txt":
        records: Iterator[_Record] = _read_text_bundle(path)
    elif suffix == ".jsonl":
        records = _read_jsonl_bundle(path)
    elif suffix == ".parquet":
        records = _read_parquet_bundle(path)
    else:
        raise BundleError(f"{path}: not a corpus bundle: unsupported suffix {suffix!r} (use .txt, .jsonl or .parquet)")
    return _assemble(path, records, canonical, on_bad)


# -- assembling --------------------------------------------------------------
def breadcrumb_levels(lines: list[str]) -> list[str]:
    """Section levels from breadcrumb lines (``> A`` per line, or ``> A > B``)."""
    levels: list[str] = []
    for line in lines:
        content = line.lstrip().lstrip(">").strip()
        levels.extend(part.strip() for part in BREADCRUMB_SPLIT_RE.split(content) if part.strip())
    return levels


def canonical_text(breadcrumb_lines: list[str], body: str, canonical: CanonicalText) -> str:
    """The text a chunk is identified, retrieved, judged and released by."""
    if canonical == "body":
        return body.strip()
    return "\n".join([*breadcrumb_lines, body]).strip()


@dataclass(slots=True)
class _Read:
    """A chunk that passed the record checks, before CID and duplicate handling."""

    rec: _Record
    text: str
    digest: str
    match: str  # which text the given CID hashes: body | with_breadcrumb | both | neither | absent


def _cid_match(rec: _Record, canonical: CanonicalText, cid: str) -> str:
    """Which text the chunk's given CID hashes (``cid``: the hash of its canonical text)."""
    if rec.given_cid is None:
        return "absent"
    other: CanonicalText = "with_breadcrumb" if canonical == "body" else "body"
    hits = {
        canonical: cid == rec.given_cid,
        other: chunk_id(canonical_text(rec.breadcrumb_lines, rec.body, other)) == rec.given_cid,
    }
    if hits["body"] and hits["with_breadcrumb"]:
        return "both"
    return next((name for name, hit in hits.items() if hit), "neither")


def _convention(matches: dict[str, int], canonical: CanonicalText) -> str:
    """The convention most given CIDs follow (ties go to the canonical text)."""
    body, crumb = matches.get("body", 0), matches.get("with_breadcrumb", 0)
    if body or crumb:
        if body == crumb:
            return canonical
        return "body" if body > crumb else "with_breadcrumb"
    if matches.get("neither"):
        return "neither"
    return "either" if matches.get("both") else "none_given"


def _cid_problem(item: _Read, convention: str) -> str | None:
    """Why a chunk's given CID does not fit the bundle, or None when it does."""
    if item.match in ("absent", "both") or (item.match == convention and convention != "neither"):
        return None
    rec = item.rec
    hashes = (
        f"the body hashes to {chunk_id(canonical_text([], rec.body, 'body'))}, "
        f"breadcrumb and body to {chunk_id(canonical_text(rec.breadcrumb_lines, rec.body, 'with_breadcrumb'))}"
    )
    if item.match == "neither":
        return f"given {rec.given_cid}, but {hashes}"
    return f"given {rec.given_cid} hashes the {item.match} text, but the bundle's CIDs hash the {convention} text"


def _assemble(path: Path, records: Iterator[_Record], canonical: CanonicalText, on_bad: OnBad) -> ParsedBundle:
    issues = _Issues(path, on_bad)
    good: list[_Read] = []
    matches: dict[str, int] = {}
    n_read = 0
    for rec in records:
        n_read += 1
        if rec.problem is not None:
            issues.bad(rec, *rec.problem)
            continue
        if not rec.body.strip():
            issues.bad(rec, "empty_chunk", "no text after the header and breadcrumb")
            continue
        text = canonical_text(rec.breadcrumb_lines, rec.body, canonical)
        digest = text_digest(text)
        match = _cid_match(rec, canonical, digest[:ID_HEX])
        matches[match] = matches.get(match, 0) + 1
        good.append(_Read(rec, text, digest, match))
    convention = _convention(matches, canonical)
    good = _drop_cid_mismatches(path, good, convention, issues)
    chunks, digests = _unique_chunks(path, good, issues)
    if not digests:
        raise BundleError(f"{path}: no usable chunks ({n_read} records read)")
    version = corpus_version(digests)
    chunks = chunks.with_columns(pl.lit(version).alias("corpus_version"))
    issue_table = pl.DataFrame(issues.rows, schema=ISSUE_SCHEMA).sort("line", maintain_order=True)
    return ParsedBundle(chunks, issue_table, version, n_read, convention, matches)


def _drop_cid_mismatches(path: Path, good: list[_Read], convention: str, issues: _Issues) -> list[_Read]:
    """Fail with counts and examples, or skip, the chunks whose CID does not fit the bundle's convention."""
    bad = [(item, why) for item in good if (why := _cid_problem(item, convention)) is not None]
    if not bad:
        return good
    if issues.on_bad == "fail":
        with_cid = sum(item.match != "absent" for item in good)
        first, why = bad[0]
        lines = ", ".join(str(item.rec.line) for item, _ in bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise BundleError(
            f"{path}:{first.rec.line}: {REASONS['cid_mismatch']}: {why}; {len(bad)} of {with_cid} given CIDs "
            f"do not fit the bundle's convention ({convention}), at lines {lines}"
        )
    for item, why in bad:
        issues.add(item.rec, "cid_mismatch", "skipped", why, item.digest[:ID_HEX])
    dropped = {id(item) for item, _ in bad}
    return [item for item in good if id(item) not in dropped]


def _unique_chunks(path: Path, good: list[_Read], issues: _Issues) -> tuple[pl.DataFrame, list[str]]:
    """The chunk table with one row per id (later repeats dropped) and the digests of its texts. Empties ``good``:
    each chunk's strings are let go once its block of rows is a table (:data:`BLOCK_ROWS`), so memory holds the
    chunks read or the table, not both."""
    columns: dict[str, list[Any]] = {name: [] for name in CHUNK_SCHEMA}
    blocks: list[pl.DataFrame] = []
    digests: list[str] = []
    first_of: dict[str, tuple[int, str]] = {}  # chunk id -> (its first line, its text's full digest)
    body_key_of: dict[bytes, tuple[str, int]] = {}  # digest of the body up to case and whitespace -> (id, line)
    good.reverse()
    while good:
        item = good.pop()
        rec, text, cid = item.rec, item.text, item.digest[:ID_HEX]
        if cid in first_of:
            first_line, digest = first_of[cid]
            if digest != item.digest:  # the full SHA-256 of the texts: equal exactly when the texts are
                raise BundleError(
                    f"{path}:{rec.line}: chunk id {cid} collides with line {first_line} for a different text"
                )
            issues.add(rec, "duplicate_id", "dropped", f"same canonical text as line {first_line}", cid)
            continue
        first_of[cid] = (rec.line, item.digest)
        body_key = hashlib.sha256(" ".join(rec.body.casefold().split()).encode("utf-8")).digest()
        if body_key in body_key_of:
            other_id, other_line = body_key_of[body_key]
            issues.add(
                rec,
                "duplicate_text",
                "reported",
                f"body equals that of {other_id} (line {other_line}) up to case and whitespace",
                cid,
            )
        else:
            body_key_of[body_key] = (cid, rec.line)
        crumb = LEVEL_SEP.join(level.replace(LEVEL_SEP, " ") for level in breadcrumb_levels(rec.breadcrumb_lines))
        row = (cid, rec.source, rec.page, crumb, text, rec.given_cid, rec.line, len(digests))
        for column, value in zip(columns.values(), row):
            column.append(value)
        digests.append(item.digest)
        if len(columns["chunk_id"]) == BLOCK_ROWS:
            blocks.append(_chunk_block(columns))
    blocks.append(_chunk_block(columns))
    return pl.concat(blocks), digests


def _chunk_block(columns: dict[str, list[Any]]) -> pl.DataFrame:
    """A table of the rows in ``columns``, which it empties."""
    # breadcrumbs travel joined and are split by polars: building a list column from Python lists costs
    # several hundred MB at corpus scale
    block = pl.DataFrame(columns, schema={**CHUNK_SCHEMA, "breadcrumb": pl.String}).with_columns(
        pl.when(pl.col("breadcrumb") == "")
        .then(pl.lit([], dtype=pl.List(pl.String)))
        .otherwise(pl.col("breadcrumb").str.split(LEVEL_SEP))
        .alias("breadcrumb"),
    )
    for column in columns.values():
        column.clear()
    return block


# -- chunks_for_rag.txt ------------------------------------------------------
def _not_a_bundle(path: Path, line: int, raw: bytes) -> BundleError:
    preview = raw[:60].decode("utf-8", "replace")
    return BundleError(f"{path}:{line}: not a corpus bundle: expected a {HEADER_FORM} header, found {preview!r}")


def _parse_header(rec: _Record, raw: bytes) -> None:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        rec.problem = ("non_utf8", f"header byte {raw[exc.start]:#04x} at column {exc.start + 1}")
        return
    m = HEADER_RE.match(line)
    if m is None:
        rec.problem = ("malformed_header", f"{line[:120]!r} is not {HEADER_FORM} (CID optional)")
        return
    source, page, cid = ((m.group(k) or "").strip() for k in ("source", "page", "cid"))
    rec.source = source or None
    rec.given_cid = cid or None
    if not SLUG_RE.match(source):
        rec.problem = ("malformed_header", f"source {source!r} is not a slug")
    elif not PAGE_RE.match(page):
        rec.problem = ("bad_page", f"PAGE:{page!r}")
    elif cid and not CID_RE.match(cid):
        rec.problem = ("malformed_header", f"CID {cid!r} is not 16 lowercase hex characters")
    else:
        rec.page = int(page)


def _is_header(raw: bytes) -> bool:
    """A header line: ``<sep>`` followed by more text, or a line starting with ``[SOURCE``."""
    return (raw.startswith(b"<sep>") and raw.strip() != b"<sep>") or raw[:7].upper() == b"[SOURCE"


def _is_separator(raw: bytes) -> bool:
    return raw.strip() == b"<sep>" or SEPARATOR_RE.match(raw) is not None


def _finish_text_record(rec: _Record, lines: list[str], bad_line: tuple[int, int, int] | None) -> _Record:
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and _is_separator(lines[-1].encode("utf-8", "replace")):
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    crumb_end = start
    while crumb_end < len(lines) and lines[crumb_end].lstrip().startswith(">"):
        crumb_end += 1
    rec.breadcrumb_lines = [ln.strip() for ln in lines[start:crumb_end]]
    rec.body = "\n".join(lines[crumb_end:])
    if rec.problem is None and bad_line is not None:
        line, col, byte = bad_line
        rec.problem = ("non_utf8", f"byte {byte:#04x} at line {line}, column {col}")
    return rec


def _read_text_bundle(path: Path) -> Iterator[_Record]:
    rec: _Record | None = None
    lines: list[str] = []
    bad_line: tuple[int, int, int] | None = None
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            raw = raw.rstrip(b"\r\n")
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if _is_header(raw):
                if rec is not None:
                    yield _finish_text_record(rec, lines, bad_line)
                rec, lines, bad_line = _Record(line=lineno), [], None
                _parse_header(rec, raw)
                continue
            if rec is None:
                if raw.strip() and not _is_separator(raw):
                    raise _not_a_bundle(path, lineno, raw)
                continue
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                if bad_line is None:
                    bad_line = (lineno, exc.start + 1, raw[exc.start])
                lines.append(raw.decode("utf-8", "replace"))
    if rec is None:
        raise BundleError(f"{path}: not a corpus bundle: no {HEADER_FORM} header in the file")
    yield _finish_text_record(rec, lines, bad_line)


# -- jsonl / parquet ---------------------------------------------------------
REQUIRED_FIELDS = ("source", "page", "text")


def _record_from_fields(line: int, obj: dict[str, Any]) -> _Record:
    rec = _Record(line=line)
    missing = [k for k in REQUIRED_FIELDS if obj.get(k) is None]
    source = obj.get("source")
    rec.source = source if isinstance(source, str) else None
    cid = obj.get("chunk_id", obj.get("cid"))
    rec.given_cid = cid if isinstance(cid, str) and cid else None
    if missing:
        rec.problem = ("bad_record", f"missing field(s) {', '.join(missing)}")
        return rec
    if not isinstance(source, str) or not SLUG_RE.match(source):
        rec.problem = ("bad_record", f"source {source!r} is not a slug")
        return rec
    page = obj["page"]
    if isinstance(page, bool) or not (isinstance(page, int) or (isinstance(page, str) and PAGE_RE.match(page))):
        rec.problem = ("bad_page", f"page {page!r}")
        return rec
    rec.page = int(page)
    if rec.page < 0:
        rec.problem = ("bad_page", f"page {page!r}")
        return rec
    if cid is not None and not (isinstance(cid, str) and CID_RE.match(cid)):
        rec.problem = ("bad_record", f"chunk id {cid!r} is not 16 lowercase hex characters")
        return rec
    crumb = obj.get("breadcrumb")
    if isinstance(crumb, str):
        rec.breadcrumb_lines = [ln.strip() for ln in crumb.splitlines() if ln.strip()]
    elif isinstance(crumb, (list, tuple)) and all(isinstance(c, str) for c in crumb):
        rec.breadcrumb_lines = ["> " + " > ".join(crumb)] if crumb else []
    elif crumb is not None:
        rec.problem = ("bad_record", f"breadcrumb {crumb!r} is neither a string nor a list of strings")
        return rec
    text = obj["text"]
    if not isinstance(text, str):
        rec.problem = ("bad_record", f"text is {type(text).__name__}, not a string")
        return rec
    rec.body = text
    return rec


def _read_jsonl_bundle(path: Path) -> Iterator[_Record]:
    seen_content = False
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                if not seen_content:
                    raise _not_a_bundle(path, lineno, raw) from None
                yield _Record(
                    line=lineno, problem=("non_utf8", f"byte {raw[exc.start]:#04x} at column {exc.start + 1}")
                )
                continue
            except json.JSONDecodeError as exc:
                if not seen_content:
                    raise _not_a_bundle(path, lineno, raw) from None
                yield _Record(line=lineno, problem=("bad_record", f"not JSON: {exc.msg}"))
                continue
            if not seen_content and not (isinstance(obj, dict) and "text" in obj and "source" in obj):
                raise BundleError(f"{path}:{lineno}: not a corpus bundle: records need source, page and text")
            seen_content = True
            if not isinstance(obj, dict):
                yield _Record(line=lineno, problem=("bad_record", "not a JSON object"))
                continue
            yield _record_from_fields(lineno, obj)
    if not seen_content:
        raise BundleError(f"{path}: not a corpus bundle: the file has no records")


def _read_parquet_bundle(path: Path) -> Iterator[_Record]:
    try:
        df = pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - any reader failure means "not a parquet bundle"
        raise BundleError(f"{path}: not a corpus bundle: cannot read as parquet ({one_line(str(exc))})") from None
    missing = [c for c in REQUIRED_FIELDS if c not in df.columns]
    if missing:
        raise BundleError(f"{path}: not a corpus bundle: missing column(s) {', '.join(missing)}")
    for row_no, obj in enumerate(df.iter_rows(named=True), 1):
        yield _record_from_fields(row_no, obj)


# -- writing -----------------------------------------------------------------
CidOf = Literal["body", "with_breadcrumb", "none"]


def format_chunk(source: str, page: int, breadcrumb: list[str], body: str, cid_of: CidOf = "body") -> str:
    """One chunk in the real ``chunks_for_rag.txt`` form; its CID hashes the ``cid_of`` text (``none``: no CID)."""
    crumb_lines = [f"> {level}" for level in breadcrumb]
    cid = "" if cid_of == "none" else f"|CID:{chunk_id(canonical_text(crumb_lines, body, cid_of))}"
    return "\n".join([f"{SEP}[SOURCE:{source}|PAGE:{page}{cid}]", *crumb_lines, body.strip(), ""])


def write_text_bundle(path: Path, chunks: Iterable[tuple[str, int, list[str], str]], cid_of: CidOf = "body") -> int:
    """Write ``(source, page, breadcrumb, body)`` chunks as a text bundle, atomically."""
    n = 0
    with atomic_file(path) as fh:
        for source, page, breadcrumb, body in chunks:
            fh.write(format_chunk(source, page, breadcrumb, body, cid_of))
            n += 1
    return n
