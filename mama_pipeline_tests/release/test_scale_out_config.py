"""The scale-out examples load: the multi-server settings file and the multiprocess run config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from mama_pipeline.settings import load_settings

REPO = Path(__file__).resolve().parents[2]
SETTINGS = REPO / "config" / "multiserver-example.yaml"
RUN_CONFIG = REPO / "config" / "multiprocess-run-config.yaml"

PROBE = """
import json, sys, yaml
import dagster as dg
from mama_pipeline.definitions import defs
job = defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey("judged_labels")])
rc = yaml.safe_load(open(sys.argv[1]))
dg.validate_run_config(job, rc)
try:
    dg.validate_run_config(job, {"execution": {"config": {"multiprocess": {"max_concurent": 4}}}})
    typo = "accepted"
except dg.DagsterInvalidConfigError as exc:
    typo = str(exc)
node = defs.resolve_asset_graph().get(dg.AssetKey("judged_labels"))
print(json.dumps({"executor": job.executor_def.name, "shards": node.partitions_def.get_partition_keys(),
                  "typo": typo}))
"""


def test_multiserver_settings_load():
    s = load_settings(SETTINGS)
    judge = s.llm.judge
    assert len(judge.base_urls) == 4 and len(set(judge.base_urls)) == 4
    assert judge.model and judge.cache_namespace and judge.api_key_env == "MAMA_LLM_API_KEY"
    assert not judge.embedded and not s.llm.query_writer.embedded
    assert s.judging.shards == 16
    assert s.corpus.bundle.startswith("hf://datasets/") and "@" in s.corpus.bundle
    assert s.release.publish.enabled is False and s.release.publish.mamaretrieval_repo_id == "ORG/mamaretrieval"


def test_run_config_is_valid_for_the_definitions_loaded_with_the_example_settings(tmp_path):
    env = {
        **os.environ,
        "MAMA_CONFIG": str(SETTINGS),
        "MAMA_DATA_DIR": str(tmp_path / "data"),
        "DAGSTER_HOME": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(RUN_CONFIG)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["executor"] == "multi_or_in_process_executor"
    assert result["shards"] == [f"shard_{i:03d}" for i in range(16)]
    assert "max_concurent" in result["typo"], "validation must reject a misspelt executor key"
    assert yaml.safe_load(RUN_CONFIG.read_text())["execution"]["config"]["multiprocess"]["max_concurrent"] == 4
