"""Command line: ``mama-pipeline demo|materialize|eval|verify``.

``materialize`` runs an asset selection with ``dagster asset materialize`` on the
project's instance (multiprocess executor), one run per partitions definition and
partition key, in dependency order. ``eval`` and ``verify`` pass their remaining
arguments to the evaluation and release command lines.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mama_pipeline.input_errors import run_cli
from mama_pipeline.settings import load_settings

REPO_DAGSTER_YAML = Path(__file__).resolve().parents[1] / "dagster.yaml"
MODULE = "mama_pipeline.definitions"


def dagster_home(data_path: Path) -> Path:
    """A Dagster instance folder under the data directory, seeded with the project's dagster.yaml."""
    home = Path(os.environ.get("DAGSTER_HOME") or data_path / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and REPO_DAGSTER_YAML.exists():
        shutil.copy(REPO_DAGSTER_YAML, home / "dagster.yaml")
    return home


def materialize(select: str) -> int:
    """Materialise the selection; stops at the first failed run and returns its exit code."""
    settings = load_settings()  # a bad configuration file is reported before anything runs
    import dagster as dg

    from mama_pipeline.definitions import defs
    from mama_pipeline.release.run_plan import materialize_commands, plan_runs

    graph = defs.resolve_asset_graph()
    keys = dg.AssetSelection.from_coercible(select).resolve(graph) if select != "*" else graph.get_all_asset_keys()
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home(settings.data_path))}
    dagster = str(Path(sys.executable).with_name("dagster"))
    commands = materialize_commands(plan_runs(graph, keys), MODULE)
    for n, args in enumerate(commands, start=1):
        print(f"[{n}/{len(commands)}] dagster {' '.join(args)}", flush=True)
        code = subprocess.call([dagster, *args], env=env)
        if code != 0:
            return code
    return 0


def demo() -> int:
    """Materialise every asset on the bundled sample, offline, then print where results are."""
    code = materialize("*")
    settings = load_settings()
    data = settings.data_path
    print("\nmama_pipeline demo " + ("finished" if code == 0 else f"FAILED (exit {code})"))
    print(f"  data directory:  {data}")
    print(f"  DuckDB store:    {settings.db_path}")
    for label, path in sorted(result_paths(data).items()):
        print(f"  {label + ':':<28} {path}")
    return code


def result_paths(data: Path) -> dict[str, Path]:
    """Release folders and reports that exist under the data directory."""
    found = {}
    for folder in sorted((data / "releases").glob("*/*")):
        found[f"release {folder.parent.name}"] = folder
    for report in sorted((data / "reports").glob("*/*.html")):
        found[f"report {report.parent.name}"] = report
    return found


def main(argv: list[str] | None = None) -> int:
    """Dispatch a subcommand; bad input ends in one line on stderr and exit status 2."""
    return run_cli("mama-pipeline", lambda: _dispatch(argv))


def _dispatch(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(prog="mama-pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="materialise everything on the bundled sample and print result paths")
    m = sub.add_parser("materialize", help="materialise an asset selection (Dagster selection syntax)")
    m.add_argument("--select", default="*")
    m.add_argument("--retry-parse-failed", action="store_true",
                   help="re-ask every LLM answer cached as parse_failed (otherwise served from the cache as failed)")
    sub.add_parser("eval", help="score runs, evaluate retrievers on BEIR benchmarks, audits, exports", add_help=False)
    sub.add_parser("verify", help="check release folders against their manifests' hashes", add_help=False)
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "demo":
        return demo()
    if args.cmd == "eval":
        from mama_pipeline.evaluation.cli import main as eval_main

        return eval_main(rest)
    if args.cmd == "verify":
        from mama_pipeline.release.cli import main as verify_main

        return verify_main(rest)
    if args.retry_parse_failed:  # read by every stage's LLM client in the runs started below
        from mama_pipeline.llm.client import RETRY_PARSE_FAILED_ENV

        os.environ[RETRY_PARSE_FAILED_ENV] = "1"
    return materialize(args.select)


if __name__ == "__main__":
    sys.exit(main())
