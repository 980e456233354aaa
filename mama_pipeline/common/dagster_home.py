"""The Dagster instance folder the command line runs on: ``DAGSTER_HOME``, else one under the data directory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mama_pipeline.common.project_files import project_file

REPO_DAGSTER_YAML = project_file("dagster.yaml")


def dagster_home(data_path: Path) -> Path:
    """A Dagster instance folder under the data directory, seeded with the project's dagster.yaml."""
    home = Path(os.environ.get("DAGSTER_HOME") or data_path / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and REPO_DAGSTER_YAML.exists():
        shutil.copy(REPO_DAGSTER_YAML, home / "dagster.yaml")
    return home
