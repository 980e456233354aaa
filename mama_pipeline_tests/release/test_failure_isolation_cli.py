"""``mama-pipeline materialize`` (multiprocess: each run launched as ``dagster asset materialize`` would) goes on
with the runs that do not depend on a failed one, names each failed and skipped step and exits non-zero."""

import dagster as dg
import pytest

from mama_pipeline import cli
from mama_pipeline.common.dagster_home import REPO_DAGSTER_YAML
from mama_pipeline.run_plan import plan_runs
from mama_pipeline_tests.release import branch_failure_defs as bf


@pytest.mark.slow
def test_independent_runs_go_on_after_a_failed_run(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(REPO_DAGSTER_YAML.parent)  # dagster -m imports the test module from the repository root
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    graph = bf.defs.resolve_asset_graph()
    code = cli.run_commands(bf.defs, plan_runs(graph, graph.materializable_asset_keys), home, bf.__name__, None)
    out = capfd.readouterr().out
    with dg.DagsterInstance.from_config(str(home)) as instance:
        made = {
            (k.to_user_string(), r.partition_key)
            for k in instance.get_asset_keys()
            for r in instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=k), limit=10).records
        }
        runs = len(instance.get_runs())
    assert code != 0
    assert runs == 6  # root, a_fails x2, b_branch x2, b_end: a_after and z_joint are never started
    assert made == {("root", None), ("a_fails", "s0"), ("b_branch", "bm25"), ("b_branch", "dense"), ("b_end", None)}
    summary = out[out.index("1 of 6 runs failed; 2 assets skipped because of a failure:") :]
    assert "FAILED a_fails: RuntimeError: injected fault in shard s1" in summary
    assert "SKIPPED a_after: depends on a_fails, not materialised by a failed run" in summary
    assert "SKIPPED z_joint: depends on a_fails, not materialised by a failed run" in summary
