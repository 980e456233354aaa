"""The asset graph, as the paper's pipeline reads it: a snapshot of keys, groups, inputs and partitions.

Regenerate after an intended change with ``UPDATE_SNAPSHOTS=1 pytest mama_pipeline_tests/foundation``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parents[1] / "snapshots" / "asset_graph.json"


def graph_summary() -> dict:
    from mama_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    repo = defs.get_repository_def()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        pdef = node.partitions_def
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "inputs": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": _partitions(pdef),
            "checks": sorted(c.name for c in node.check_keys),
        }
    return {
        "assets": assets,
        "sensors": sorted(s.name for s in repo.sensor_defs),
        "schedules": sorted(s.name for s in repo.schedule_defs),
        "resources": sorted(repo.get_top_level_resources()),
    }


def _partitions(pdef) -> list[str] | str | None:
    """A static definition's keys; a dynamic one by its name (its keys live on the instance)."""
    import dagster as dg

    if pdef is None:
        return None
    if isinstance(pdef, dg.DynamicPartitionsDefinition):
        return f"dynamic:{pdef.name}"
    return sorted(pdef.get_partition_keys())


def test_asset_graph_matches_snapshot():
    current = graph_summary()
    if os.environ.get("UPDATE_SNAPSHOTS") or not SNAPSHOT.exists():
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())


def test_every_area_group_is_present_and_stages_are_chained():
    assets = graph_summary()["assets"]
    groups = {a["group"] for a in assets.values()}
    assert groups == {
        "mamabench",
        "calibration",
        "corpus",
        "queries",
        "retrieval",
        "judging",
        "evaluation",
        "release",
        "multipassage",
        "clinician",
        "robustness",
        "systems",
        "plan",
        "submissions",
        "leaderboard",
        "reports",
    }
    chain = [
        ("corpus_chunks", "sampled_chunks"),
        ("sampled_chunks", "generated_queries"),
        ("pooled_pairs", "judged_labels"),
        ("judged_labels", "judgments"),
        ("judgments", "scoreboard"),
        ("judgments", "mamaretrieval_release"),
        ("mamabench_items", "mamabench_release"),
        ("healthbench_scope_verdicts", "calibration_side_file"),
        ("multipassage_candidates", "multipassage_questions"),
        ("multipassage_pool", "multipassage_labels"),
        ("multipassage_labels", "multipassage_scoreboard"),
        ("multipassage_questions", "mamaretrieval_release"),
        ("multipassage_labels", "mamaretrieval_release"),
        ("judgments", "clinician_tasks"),
        ("clinician_labels", "clinician_agreement"),
        ("generated_queries", "query_variants"),
        ("query_variants", "variant_rankings"),
        ("judgments", "variant_labels"),
        ("variant_labels", "robustness_scoreboard"),
        ("variant_labels", "mamaretrieval_release"),
        ("clinician_report", "reports_index"),
        ("mamabench_items", "systems_items"),
        ("calibration_harness_report", "system_scoreboard"),
        ("judgments", "submission_scores"),
        ("variant_labels", "submission_scores"),
        ("multipassage_fact_labels", "submission_scores"),
        ("mamabench_items", "submission_scores"),
        ("per_query_results", "mamaretrieval_leaderboard"),
        ("system_grades", "mamabench_leaderboard"),
        ("submission_scores", "mamaretrieval_leaderboard"),
        ("submission_scores", "mamabench_leaderboard"),
        ("mamaretrieval_leaderboard", "mamaretrieval_release"),
        ("mamabench_leaderboard", "mamabench_release"),
    ]
    for upstream, downstream in chain:
        assert upstream in assets[downstream]["inputs"], (upstream, downstream)
