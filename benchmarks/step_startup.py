"""Per-step process start-up of the multiprocess executor: spawn against forkserver with preloaded modules.

Materialises the same cheap selection (the nine mamabench raw-pool assets: each step
reads one small bundled file) with ``dagster asset materialize``, once per start
method, in one fresh data directory, and prints the wall times side by side with the
load average. ``forkserver`` preloads ``mama_pipeline.definitions`` (Dagster's own
modules with it), so each step forks a process that has already imported them.

    .venv/bin/python benchmarks/step_startup.py [--select A,B,...] [--root /tmp/step-startup]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DAGSTER = str(Path(sys.executable).with_name("dagster"))
POOLS = [
    "afrimedqa_mcq",
    "afrimedqa_saq",
    "healthbench_consensus",
    "healthbench_hard",
    "healthbench_oss_eval",
    "kenya_vignettes",
    "medmcqa",
    "medqa_usmle",
    "whb",
]
START_METHODS = {
    "spawn (Dagster's default)": None,
    "forkserver, definitions preloaded": {"forkserver": {"preload_modules": ["mama_pipeline.definitions"]}},
}


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--select", default=",".join(f"mamabench_raw_{p}" for p in POOLS))
    ap.add_argument("--root", default="/tmp/step-startup")
    args = ap.parse_args()
    root = Path(args.root)
    shutil.rmtree(root, ignore_errors=True)
    (root / "dagster_home").mkdir(parents=True)
    shutil.copy(REPO / "dagster.yaml", root / "dagster_home" / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(root / "dagster_home"),
        "MAMA_DATA_DIR": str(root / "data"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    for label, start in [("warm-up (not counted)", None), *START_METHODS.items()]:
        config = root / "run_config.yaml"
        executor = {"max_concurrent": 2, **({"start_method": start} if start else {})}
        config.write_text(yaml.safe_dump({"execution": {"config": {"multiprocess": executor}}}))
        started = time.perf_counter()
        proc = subprocess.run(
            [
                DAGSTER,
                "asset",
                "materialize",
                "-m",
                "mama_pipeline.definitions",
                "--select",
                args.select,
                "-c",
                str(config),
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        steps = (proc.stderr + proc.stdout).count("STEP_SUCCESS")
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode}): {proc.stderr[-300:]}"
        print(f"{label:<36} {seconds:7.1f} s  {steps} steps  {status}  [{load()}]", flush=True)


if __name__ == "__main__":
    main()
