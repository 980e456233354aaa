"""The one exception raised for unusable evaluation inputs (an :class:`~mama_pipeline.common.input_errors.InputError`)."""

from __future__ import annotations

import os

from mama_pipeline.common.input_errors import InputError, at


class EvaluationInputError(InputError):
    """Bad input, named by file and line (or by record id) with the reason."""

    def __init__(self, source: str | os.PathLike[str], reason: str, line: int | None = None):
        self.source = str(source)
        self.line = line
        self.reason = reason
        super().__init__(at(self.source, reason, line))
