"""The one exception raised for unusable evaluation inputs."""
from __future__ import annotations

import os


class EvaluationInputError(ValueError):
    """Bad input, named by file and line (or by record id) with the reason."""

    def __init__(self, source: str | os.PathLike[str], reason: str, line: int | None = None):
        self.source = str(source)
        self.line = line
        self.reason = reason
        where = f"{self.source}:{line}" if line is not None else self.source
        super().__init__(f"{where}: {reason}")
