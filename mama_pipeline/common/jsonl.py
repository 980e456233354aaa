"""The one JSON-lines reader: each non-blank line parsed, a bad one named by file and line."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mama_pipeline.common.input_errors import InputError, at, text_lines

ErrorAt = Callable[[Path, str, int], Exception]  # (file, reason, line) -> the caller's kind of InputError


def input_error_at(path: Path, reason: str, line: int) -> InputError:
    """An :class:`InputError` reading ``<file>:<line>: <reason>``."""
    return InputError(at(path, reason, line))


def json_lines(
    path: str | os.PathLike[str], what: str = "file", error: ErrorAt = input_error_at
) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a UTF-8 JSON-lines file.

    A line that is not JSON raises ``error(file, "not valid JSON: <why>", line)``; a missing file or a byte
    that is not UTF-8 is an :class:`InputError` naming the file (and line).
    """
    path = Path(path)
    for line_no, line in text_lines(path, what):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(path, f"not valid JSON: {exc.msg}", line_no) from None
        yield line_no, value
