"""``mama-pipeline materialize --executor in_process``: the project's definitions, a line per step, a summary."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("mama-pipeline"))


def test_in_process_materialize_prints_steps_and_summary(tmp_path):
    env = {**os.environ, "MAMA_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(REPO)}
    env.pop("DAGSTER_HOME", None)
    proc = subprocess.run(
        [
            CLI,
            "materialize",
            "--select",
            "key:mamabench_raw_medmcqa or key:mamabench_raw_whb",
            "--executor",
            "in_process",
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    steps = [line.split()[2] for line in out.splitlines() if " ok " in line]
    assert steps == ["mamabench_raw_medmcqa", "mamabench_raw_whb"]
    assert "mama_pipeline finished in" in out and "2 materialisations" in out
    assert "materialised this run: mamabench_raw_medmcqa 120 rows, mamabench_raw_whb 20 rows" in out
    home = tmp_path / "data" / "dagster_home"
    assert f"DAGSTER_HOME={home}" in out and "dagster dev -w workspace.yaml" in out
    log = (home / "logs" / "materialize.log").read_text()
    assert "STEP_SUCCESS" in log and "STEP_SUCCESS" not in out
