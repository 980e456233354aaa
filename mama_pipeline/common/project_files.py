"""Project files kept at the repository's top level (``sql/``, ``dagster.yaml``, ``config/*.yaml``) and shipped in
the wheel under ``mama_pipeline/_shipped/`` (setup.py's ``build_py`` copies them there).

In a checkout, editable install or not, they are read where they lie; an installed wheel reads its own copies.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # mama_pipeline/
SHIPPED_DIR = PACKAGE_DIR / "_shipped"
SHIPPED = ("sql", "dagster.yaml", "config")  # what setup.py copies (of config/: the *.yaml files)


def project_file(*parts: str) -> Path:
    """A top-level project file or folder: the wheel's copy when there is one, else the checkout's."""
    inside = SHIPPED_DIR.joinpath(*parts)
    return inside if inside.exists() else PACKAGE_DIR.parent.joinpath(*parts)
