"""Unusable input, reported in one line naming the file (and line or record) and the reason.

Every loader raises :class:`InputError` (or a subclass) for a missing, empty,
truncated, wrongly encoded or wrongly shaped input; :func:`run_cli` turns it into
``<prog>: error: <file>:<line>: <reason>`` on stderr and exit status 2, with no
traceback. The readers here give the loaders UTF-8 text lines and parquet tables
with those errors built in.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

EXIT_BAD_INPUT = 2


class InputError(ValueError):
    """Input that cannot be used; ``str()`` is one line naming the file (and line or record) and the reason."""


def at(source: str | os.PathLike[str], reason: str, line: int | None = None) -> str:
    """``<file>:<line>: <reason>`` (or ``<file>: <reason>``)."""
    return f"{source}:{line}: {reason}" if line is not None else f"{source}: {reason}"


def one_line(text: str) -> str:
    """A message folded onto one line (``; `` between its lines)."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def text_lines(path: str | os.PathLike[str], what: str = "file") -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) of a UTF-8 text file; a missing file or a bad byte is an InputError."""
    path = Path(path)
    _must_be_file(path, what)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            yield lineno, _decode(path, raw, lineno).rstrip("\r\n")


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """The whole of a UTF-8 text file; a missing file or a bad byte (named by line) is an InputError."""
    path = Path(path)
    _must_be_file(path, what)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(at(path, f"bytes that are not UTF-8: byte {data[exc.start]:#04x}", line)) from None


def read_parquet(path: str | os.PathLike[str], what: str = "file"):
    """A parquet file as a polars table; a missing or unreadable file is an InputError."""
    import polars as pl

    path = Path(path)
    _must_be_file(path, what)
    try:
        return pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - polars raises several types for a damaged or foreign file
        raise InputError(at(path, f"cannot be read as parquet: {one_line(str(exc))[:200]}")) from None


def describe(exc: BaseException) -> str:
    """The one-line message of a bad-input error (an OSError names its file)."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return at(exc.filename, exc.strerror or type(exc).__name__)
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return one_line(exc.args[0])  # str(KeyError) would quote the message
    return one_line(str(exc)) or type(exc).__name__


def run_cli(prog: str, command: Callable[[], int], also: tuple[type[BaseException], ...] = ()) -> int:
    """Run a command-line action; bad input (and the ``also`` errors) prints one line and returns 2."""
    try:
        return command()
    except (InputError, OSError, *also) as exc:
        print(f"{prog}: error: {describe(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _must_be_file(path: Path, what: str) -> None:
    if not path.exists():
        raise InputError(at(path, f"{what} does not exist"))
    if not path.is_file():
        raise InputError(at(path, f"{what} is not a file"))


def _decode(path: Path, raw: bytes, lineno: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            at(path, f"bytes that are not UTF-8: byte {raw[exc.start]:#04x} at column {exc.start + 1}", lineno)
        ) from None
