"""Where each stored table's SQL contract lies: ``sql/tables/<area>/<table>.sql``, the area being the package folder
whose code writes the table (the layout test in ``mama_pipeline_tests/foundation/test_architecture.py``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from mama_pipeline.common.project_files import project_file


@lru_cache(maxsize=1)
def contract_files() -> dict[str, Path]:
    """Table name -> its DDL file, across the area folders of ``sql/tables``; a table with two files is an error."""
    found: dict[str, Path] = {}
    for path in sorted(project_file("sql", "tables").glob("*/*.sql")):
        if path.stem in found:
            raise ValueError(f"{path}: table {path.stem!r} already has its DDL in {found[path.stem]}")
        found[path.stem] = path
    return found
