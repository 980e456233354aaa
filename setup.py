"""Ships the top-level project files (sql/, dagster.yaml, config/*.yaml) inside the wheel, under
mama_pipeline/_shipped/ (read by mama_pipeline.common.project_files); everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithProjectFiles(build_py):
    """build_py, then copy the top-level project files into the built package (an editable install reads
    them in the checkout instead)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "mama_pipeline" / "_shipped"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(ROOT / "sql", target / "sql", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(ROOT / "dagster.yaml", target / "dagster.yaml")
        (target / "config").mkdir()
        for path in sorted((ROOT / "config").glob("*.yaml")):
            shutil.copy2(path, target / "config" / path.name)


setup(cmdclass={"build_py": BuildPyWithProjectFiles})
