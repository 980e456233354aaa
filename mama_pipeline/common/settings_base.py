"""Base class for configuration sections (unknown keys are errors) and configured-path resolution.

Paths a user writes in a configuration file resolve against that file's folder.
Defaults that point at fixtures shipped with the package are written
``bundled:<path inside the package>`` and resolve against the installed package,
wherever the configuration file lives; a user may write that form too.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # mama_pipeline/
BUNDLED = "bundled:"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def bundled(relative: str) -> str:
    """A default location inside the package, e.g. ``bundled("sample_data/corpus/chunks_for_rag.txt")``."""
    return BUNDLED + relative


def resolve_path(path: str, base: Path) -> Path:
    """A configured local path: ``bundled:`` against the package, absolute as given, others against ``base``."""
    if path.startswith(BUNDLED):
        return PACKAGE_DIR / path[len(BUNDLED) :]
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(base) / p
