"""``mama-pipeline materialize`` with nothing changed launches no run; a changed input runs only what reads it.

The demo cut of the bundled sample, every LLM stage on the fake server, selection: the calibration harness report
and everything upstream of it (mamabench's pools, the scope classifier, the calibration side-file). The first run is
in process; the re-runs use the multiprocess executor, as a real deployment does.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from mama_pipeline.run_plan import OBSERVATION_TAGS
from mama_pipeline_tests.support.demo_store import demo_config, env_for, materialize

SELECT = "*calibration_harness_report"


def counts(env: dict[str, str]) -> tuple[int, dict[str, int]]:
    """(runs that materialised something, materialisations per asset) on the instance."""
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        runs = [r for r in instance.get_runs() if not OBSERVATION_TAGS.items() <= r.tags.items()]
        per_asset = {
            key: len(instance.fetch_materializations(dg.AssetKey(key), limit=1000).records)
            for key in ("mamabench_raw_medmcqa", "mamabench_scope_verdicts", "calibration_meta_eval")
        }
    return len(runs), per_asset


@pytest.mark.slow
def test_nothing_changed_launches_no_run_and_a_changed_file_reruns_its_readers_only(tmp_path, fake_llm):
    config = demo_config(tmp_path / "sample", fake_llm.url)
    env = env_for(tmp_path, config, "noop")
    first = materialize(env, SELECT, "--executor", "in_process")
    assert "never materialised" in first.stdout
    runs, per_asset = counts(env)
    assert per_asset == {"mamabench_raw_medmcqa": 1, "mamabench_scope_verdicts": 1, "calibration_meta_eval": 1}

    noop = materialize(env, SELECT, "--executor", "multiprocess")
    assert "nothing changed since the last materialisation: no run launched" in noop.stdout
    assert "dagster asset materialize" not in noop.stdout
    assert counts(env) == (runs, per_asset)

    # the same rows written with other whitespace: other bytes, so a new data version of the calibration input
    meta_eval = Path(config).parent / "sample_data" / "demo" / "oss_meta_eval-demo.jsonl"
    rows = [json.loads(line) for line in meta_eval.read_text().splitlines() if line.strip()]
    meta_eval.write_text("".join(json.dumps(r, indent=None, separators=(", ", ":  ")) + "\n" for r in rows))
    changed = materialize(env, SELECT, "--executor", "multiprocess")
    assert "calibration_meta_eval: calibration_input_files has a new data version" in changed.stdout
    assert "mamabench_raw_medmcqa" not in changed.stdout and "mamabench_scope_verdicts" not in changed.stdout
    runs_after, per_asset_after = counts(env)
    assert runs_after > runs
    assert per_asset_after == {"mamabench_raw_medmcqa": 1, "mamabench_scope_verdicts": 1, "calibration_meta_eval": 2}

    again = materialize(env, SELECT, "--executor", "multiprocess")
    assert "nothing changed" in again.stdout and counts(env) == (runs_after, per_asset_after)
    materialize(env, SELECT, "--executor", "in_process", "--all")  # --all runs every selected asset, changed or not
    assert counts(env)[1] == {"mamabench_raw_medmcqa": 2, "mamabench_scope_verdicts": 2, "calibration_meta_eval": 3}
