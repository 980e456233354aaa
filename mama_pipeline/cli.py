"""Command line: ``mama-pipeline demo|materialize|eval|verify``.

``eval`` and ``verify`` pass their remaining arguments to the evaluation and
release command lines (``mama-pipeline eval --help``).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mama_pipeline.settings import load_settings

REPO_DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"


def dagster_home(data_path: Path) -> Path:
    """A Dagster instance folder under the data directory, seeded with the project's dagster.yaml."""
    home = Path(os.environ.get("DAGSTER_HOME") or data_path / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and REPO_DAGSTER_YAML.exists():
        shutil.copy(REPO_DAGSTER_YAML, home / "dagster.yaml")
    return home


def materialize(select: str) -> int:
    settings = load_settings()
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home(settings.data_path))}
    cmd = [str(Path(sys.executable).with_name("dagster")), "asset", "materialize",
           "-m", "mama_pipeline.definitions", "--select", select]
    return subprocess.call(cmd, env=env)


def demo() -> int:
    """Materialise every asset on the bundled sample, offline, then print where results are."""
    code = materialize("*")
    settings = load_settings()
    data = settings.data_path
    print("\nmama_pipeline demo " + ("finished" if code == 0 else f"FAILED (exit {code})"))
    print(f"  data directory:  {data}")
    print(f"  DuckDB store:    {settings.db_path}")
    for label, path in sorted(result_paths(data).items()):
        print(f"  {label + ':':<16} {path}")
    return code


def result_paths(data: Path) -> dict[str, Path]:
    """Release folders and reports that exist under the data directory."""
    found = {}
    for folder in sorted((data / "releases").glob("*/*")) if (data / "releases").exists() else []:
        found[f"release {folder.parent.name}"] = folder
    for report in sorted((data / "reports").glob("*/*.html")) if (data / "reports").exists() else []:
        found[f"report {report.parent.name}"] = report
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mama-pipeline", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="materialise everything on the bundled sample and print result paths")
    m = sub.add_parser("materialize", help="materialise an asset selection")
    m.add_argument("--select", default="*")
    sub.add_parser("eval", help="score runs, evaluate retrievers on BEIR benchmarks, audits, exports", add_help=False)
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "demo":
        return demo()
    if args.cmd == "eval":
        from mama_pipeline.evaluation.cli import main as eval_main

        return eval_main(rest)
    return materialize(args.select)


if __name__ == "__main__":
    sys.exit(main())
