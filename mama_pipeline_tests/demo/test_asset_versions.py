"""Each asset's code version covers what it reads: declared settings are checked on a demo run, and a change re-runs
only what it touches.

The settings an asset reads are found while it runs (``support/settings_reads.py``: every read of a settings
section or field made during an asset's step, by the asset or by a resource for it), not by reading its code: the
LLM stage settings reach an asset through the ``llm`` resource and a section is often handed on to pure functions
as an object, which a static reading of the asset's function would miss; a recorded read that was not declared
fails here. Reads on branches the demo does not take are not seen: those declarations are by hand.

The test run's one demo run (conftest's ``demo_store``: the demo configuration, every LLM stage on the fake server,
``mama-pipeline demo``), then planning only (``run_plan.changed_partitions``, what ``materialize`` would run) and a
``materialize`` that finds nothing changed, each on its own copy of the Dagster instance; a ``materialize`` after a
change that re-runs assets whose output comes back the same, on a copy of the store and the instance.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from mama_pipeline.common.code_version import (
    BY_PARTITION,
    OBSERVED,
    OBSERVED_BY,
    declared_settings,
    read_path,
)
from mama_pipeline.resources import SettingsResource
from mama_pipeline.settings import load_settings
from mama_pipeline_tests.support.demo_store import REPO, DemoStore, materialize
from mama_pipeline_tests.support.settings_reads import recording

SETTINGS_READ = {"reads_the_judging_shards": "corpus.bundle"}  # the scratch asset below: judging not declared


def declarations(defs: dg.Definitions) -> dict[str, set[str]]:
    """Asset key -> the settings paths declared for it (a multi-asset's keys: every key's, together)."""
    out = {}
    for assets_def in defs.assets or []:
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.is_executable:
            module = sys.modules[assets_def.op.compute_fn.decorated_fn.__module__]
            names = [k.to_user_string() for k in assets_def.keys]
            paths = {p for n in names for p in declared_settings(module, n)}
            out.update(dict.fromkeys(names, paths))
    return out


def covered(path: str, mine: set[str]) -> bool:
    """Whether a declaration covers a read: ``a.b`` by ``a.b`` or ``a``; ``a`` (the section itself) by any of its
    paths; ``a.*`` (the whole section dumped) by ``a`` only."""
    section = path.split(".")[0]
    if path.endswith(".*") or path == "*":
        return section in mine
    return path in mine or section in mine or any(d.startswith(path + ".") for d in mine)


def undeclared(reads: dict[str, set[str]], declared: dict[str, set[str]]) -> dict[str, set[str]]:
    """Asset -> the paths it read that its declaration does not cover."""
    out = {}
    for asset, paths in reads.items():
        mine = {read_path(p) for p in declared.get(asset, set())}
        missing = {p for p in paths if not covered(p, mine)}
        if missing:
            out[asset] = missing
    return out


@dg.asset
def reads_the_judging_shards(settings: SettingsResource) -> int:
    return settings.get().judging.shards


@dg.asset
def dumps_the_judging_section(settings: SettingsResource) -> int:
    return len(settings.get().judging.model_dump())


@dg.asset
def reads_the_pooled_retrievers(settings: SettingsResource) -> int:
    return len(settings.get().retrieval.pooled)  # derived from pool_retrievers and the retrievers' names


def test_a_read_the_asset_did_not_declare_is_found(tmp_path, monkeypatch):
    config = REPO / "mama_pipeline" / "demo_config.yaml"
    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    load_settings(config)  # loaded (and validated) before the run, as the definitions load it before any step
    with recording() as seen:
        dg.materialize(
            [reads_the_judging_shards, dumps_the_judging_section, reads_the_pooled_retrievers],
            resources={"settings": SettingsResource(config_path=str(config))},
        )
    reads: dict[str, set[str]] = {}
    for asset, path in seen:
        reads.setdefault(asset, set()).add(path)
    assert reads == {
        "reads_the_judging_shards": {"judging", "judging.shards"},
        "dumps_the_judging_section": {"judging", "judging.*"},  # every field at once
        "reads_the_pooled_retrievers": {"retrieval", "retrieval.pooled"},  # the value, not what it is derived from
    }
    reads = {"reads_the_judging_shards": reads["reads_the_judging_shards"]}
    declared = {"reads_the_judging_shards": set(declared_settings(sys.modules[__name__], "reads_the_judging_shards"))}
    assert undeclared(reads, declared) == {"reads_the_judging_shards": {"judging", "judging.shards"}}
    assert undeclared(reads, {"reads_the_judging_shards": {"judging"}}) == {}
    assert undeclared(reads, {"reads_the_judging_shards": {"judging.shards"}}) == {}
    assert undeclared(reads, {"reads_the_judging_shards": {"judging.pilot_size"}}) == {
        "reads_the_judging_shards": {"judging.shards"}
    }
    dumped = {"reads_the_judging_shards": {"judging", "judging.*"}}  # the whole section dumped
    assert undeclared(dumped, {"reads_the_judging_shards": {"judging.shards"}}) == {
        "reads_the_judging_shards": {"judging.*"}
    }
    assert undeclared(dumped, {"reads_the_judging_shards": {"judging"}}) == {}


def test_an_asset_with_a_retriever_entry_in_its_version_reads_the_retrievers_input():
    """``retrieval.retrievers`` is hashed by its names (``BY_PARTITION``), ``retrieval.pooled`` and
    ``retrieval.audited`` are lists of names: an asset declaring one must have an observed input that versions the
    entries among its upstream assets, or a changed entry would not make it stale."""
    from mama_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    declared = declarations(defs)
    sources = {dg.AssetKey(k) for k in BY_PARTITION["retrieval.retrievers"]}
    names = {"retrieval", "retrieval.retrievers", "retrieval.pooled", "retrieval.audited"}
    blind = [
        asset
        for asset, paths in declared.items()
        if paths & names and not sources & set(graph.upstream_key_iterator(dg.AssetKey(asset)))
    ]
    assert blind == []
    assert {"pooled_pairs", "audit_pool", "multipassage_pool", "variant_labels", "mamaretrieval_release"} <= {
        a for a, p in declared.items() if p & names
    }


def test_an_asset_with_a_setting_versioned_by_its_observed_input_depends_on_that_input():
    """A path declared ``@observed`` is in no code version: the asset must read an observed input that versions
    what it reads of it (``OBSERVED_BY``; a partitioned one partitioned as the asset is, one version per partition;
    an unpartitioned one versions every partition's part at once), or a change to it would not make it stale."""
    from mama_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    observed = {a for a, paths in declarations(defs).items() if any(p.endswith(OBSERVED) for p in paths)}
    assert {
        "rankings",
        "multipassage_rankings",
        "variant_rankings",
        "multipassage_candidates",
        "system_answers",
    } <= observed
    for asset in observed:
        node = graph.get(dg.AssetKey(asset))
        inputs = [graph.get(k) for k in node.parent_keys if k.to_user_string() in OBSERVED_BY]
        assert inputs, f"{asset} declares an @observed path but reads none of {OBSERVED_BY}"
        assert all(i.partitions_def in (None, node.partitions_def) for i in inputs), asset


@pytest.fixture
def demo(demo_store: DemoStore) -> tuple[Path, dict[str, str], dict[str, set[str]]]:
    """(configuration, environment, the reads recorded per asset) after ``mama-pipeline demo``."""
    return demo_store.config, demo_store.env, demo_store.reads


@pytest.mark.slow
def test_every_asset_declares_the_settings_it_reads(demo):
    from mama_pipeline.definitions import defs

    _, _, reads = demo
    assert {"retrieval.retrievers", "retrieval.pool_depth"} <= reads["rankings"]  # the recorder saw the demo
    assert "llm.judge" in reads["judged_labels"]  # through the llm resource
    declared = declarations(defs)
    observed = {k.to_user_string() for k in defs.resolve_asset_graph().external_asset_keys}
    assert set(reads) - set(declared) <= observed  # the observed inputs fingerprint settings: no code version
    assert undeclared({a: p for a, p in reads.items() if a in declared}, declared) == {}


@pytest.mark.slow
def test_materialize_after_the_demo_launches_no_run(demo, tmp_path):
    _, env, _ = demo
    env = {**env, "DAGSTER_HOME": str(tmp_path / "dagster_home")}  # the inputs are observed onto a copy
    shutil.copytree(demo[1]["DAGSTER_HOME"], env["DAGSTER_HOME"])
    out = materialize(env, "*")
    assert "nothing changed since the last materialisation: no run launched" in out.stdout, out.stdout[-3000:]
    assert "dagster asset materialize" not in out.stdout


def plan_with(demo, tmp_path, monkeypatch, change) -> tuple[set, set]:
    """After the demo, with the configuration ``change``d: the (asset, partition) pairs ``materialize`` would run,
    and those Dagster (its UI) calls stale."""
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._time import get_current_datetime

    from mama_pipeline.definitions import build_defs
    from mama_pipeline.run_plan import RunStep, changed_partitions, observe_inputs

    config, env, _ = demo
    raw = yaml.safe_load(Path(config).read_text())
    change(raw)
    changed = Path(config).with_name(f"changed-{tmp_path.name}.yaml")  # beside it: the same relative paths
    changed.write_text(yaml.safe_dump(raw))
    home = tmp_path / "dagster_home"
    shutil.copytree(env["DAGSTER_HOME"], home)
    monkeypatch.setenv("MAMA_CONFIG", str(changed))
    monkeypatch.setenv("MAMA_DATA_DIR", env["MAMA_DATA_DIR"])
    defs = build_defs(load_settings(changed))
    graph = defs.resolve_asset_graph()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        observe_inputs(defs, instance)
        planned = changed_partitions(graph, graph.materializable_asset_keys, instance)
        view = AssetGraphView(  # as the UI's stale status is resolved
            temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
            instance=instance,
            asset_graph=graph,
        )
        resolver = CachingStaleStatusResolver(instance, graph, view)
        stale = {
            (key.to_user_string(), p)
            for key in graph.materializable_asset_keys
            for p in RunStep((key,), graph.get(key).partitions_def).partition_keys(instance)
            if resolver.get_status(key, p) == StaleStatus.STALE
        }
    return {(k.to_user_string(), p) for k, parts in planned.items() for p in parts}, stale


SHARDS = [("judged_labels", "shard_000"), ("judged_labels", "shard_001")]
LAST = {"mamaretrieval_leaderboard", "mamabench_leaderboard", "mamaretrieval_release", "mamabench_release"}
LAST |= {"release_publication", "reports_index"}


@pytest.mark.slow
def test_a_retriever_parameter_reruns_that_retriever_and_what_reads_its_ranking_only(demo, tmp_path, monkeypatch):
    def splade_shorter(raw):
        (entry,) = [r for r in raw["retrieval"]["retrievers"] if r["name"] == "splade-tiny"]
        entry.setdefault("params", {})["max_seq_length"] = 64

    expected = {("rankings", "splade-tiny"), ("multipassage_rankings", "splade-tiny"), *SHARDS}
    expected.add(("variant_rankings", "splade-tiny"))  # its own partition of the variant rankings, not the others
    expected |= {
        (a, None)
        for a in {
            # what reads the pooled ranking: the pool, its judgments and everything scored from them
            "pooled_pairs",
            "audit_pool",
            "judged_set",  # adaptive judging's choice of pairs (empty under the demo's full strategy)
            "unjudged_estimate",
            "judgments",
            "judging_failures",
            "orphaned_judgments",
            "judge_pilot_sample",
            "reference_judgments",
            "judge_reliability",
            "judge_confusion",
            "audit_judgments",
            "pool_completeness",
            "per_query_results",
            "scoreboard",
            "significance",
            "evaluation_report",
            "held_out_scoreboard",
            "segment_scoreboard",
            "segment_significance",
            "clinician_tasks",
            "clinician_projects",
            "clinician_labels",
            "clinician_agreement",
            "clinician_confusion",
            "clinician_validated",
            "clinician_estimates",
            "clinician_report",
            # splade-tiny runs again on other queries: BEIR, the multi-passage questions, the robustness variants
            "beir_scoreboard",
            "beir_significance",
            "beir_audits",
            "beir_segment_scoreboard",
            "beir_segment_significance",
            "multipassage_pool",
            "multipassage_labels",
            "multipassage_fact_labels",
            "multipassage_per_query",
            "multipassage_scoreboard",
            "multipassage_significance",
            "multipassage_report",
            "variant_holes",
            "variant_labels",
            "robustness_per_query",
            "robustness_scoreboard",
            # not mamabench_leaderboard: no mamabench entry reads a ranking (no submission here)
            "mamaretrieval_leaderboard",
            "mamaretrieval_release",
            "mamabench_release",  # its clinician part reads the judgments
            "release_publication",
            "reports_index",
            "llm_plan",  # reads the pools, the judgments and the robustness rankings
        }
    }
    planned, stale = plan_with(demo, tmp_path, monkeypatch, splade_shorter)
    assert planned == expected
    # what Dagster's UI marks stale: the readers of splade-tiny's input (the others run because an input of theirs
    # does); the plan runs each of them. Not the multi-passage candidates (their encoder is minilm) nor the answering
    # systems (none uses splade-tiny): their observed inputs did not change
    assert stale == {
        ("rankings", "splade-tiny"),
        ("multipassage_rankings", "splade-tiny"),
        ("variant_rankings", "splade-tiny"),
        *{
            (a, None)
            for a in (
                "beir_scoreboard",
                "beir_significance",
                "beir_audits",
                "beir_segment_scoreboard",
                "beir_segment_significance",
            )
        },
    }


@pytest.mark.slow
def test_a_retriever_added_and_scored_plans_its_own_partitions_only(demo, tmp_path, monkeypatch):
    """Maintainer case (b): a retriever added and scored on the existing labels (the pools name the old retrievers):
    of the assets with a partition per retriever, only the new retriever's partitions run; the others' are neither
    stale nor planned (each is versioned by its own retriever's input), the variant rankings' included."""

    def add_scored_retriever(raw):
        r = raw["retrieval"]
        names = [entry["name"] for entry in r["retrievers"]]
        r["pool_retrievers"], r["audit"]["retrievers"] = names, names
        r["retrievers"].append({"name": "bm25-k12", "kind": "bm25", "params": {"k1": 1.2, "b": 0.75}})

    planned, stale = plan_with(demo, tmp_path, monkeypatch, add_scored_retriever)
    per_retriever = ("rankings", "multipassage_rankings", "variant_rankings")
    assert {(a, p) for a, p in planned if a in per_retriever} == {(a, "bm25-k12") for a in per_retriever}
    assert not {(a, p) for a, p in stale if a in per_retriever}


@pytest.mark.slow
def test_a_leaderboard_setting_reruns_the_boards_releases_and_index_only(demo, tmp_path, monkeypatch):
    def fewer_resamples(raw):
        raw["leaderboard"] = {"resamples": 200}

    planned, stale = plan_with(demo, tmp_path, monkeypatch, fewer_resamples)
    assert planned == {(a, None) for a in LAST}  # not llm_plan: none of the LLM stages' inputs runs
    assert stale == {("mamaretrieval_leaderboard", None), ("mamabench_leaderboard", None)}  # new code versions


UNCHANGED_LINE = "skipped {}: its inputs came back unchanged"


def materialised_since(home: Path, runs_before: set[str]) -> set[tuple[str, str | None]]:
    """The (asset, partition) pairs the runs made after ``runs_before`` materialised."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        new = [r.run_id for r in instance.get_runs() if r.run_id not in runs_before]
        return {
            (r.event_log_entry.dagster_event.asset_key.to_user_string(), r.event_log_entry.dagster_event.partition)
            for run_id in new
            for r in instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
        }


@pytest.mark.slow
def test_a_rerun_whose_output_comes_back_the_same_stops_there(demo, tmp_path):
    """The rewrite gate's ``timeout_s``: the assets that declare ``llm.rewrite_gate`` (or all of ``llm``) get new code
    versions and run again, but the setting is the HTTP client's wait limit only and every answer is cached (no
    request is sent), so their tables and pages come back the same and what reads them is skipped, not run."""
    config, env, _ = demo
    raw = yaml.safe_load(Path(config).read_text())
    raw["llm"]["rewrite_gate"]["timeout_s"] = 30.0
    changed = Path(config).with_name(f"changed-{tmp_path.name}.yaml")  # beside it: the same relative paths
    changed.write_text(yaml.safe_dump(raw))
    env = {
        **env,
        "MAMA_CONFIG": str(changed),
        "MAMA_DATA_DIR": str(tmp_path / "data"),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
    }
    shutil.copytree(demo[1]["MAMA_DATA_DIR"], env["MAMA_DATA_DIR"])
    shutil.copytree(demo[1]["DAGSTER_HOME"], env["DAGSTER_HOME"])
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        runs_before = {r.run_id for r in instance.get_runs()}
    # in process: what runs and what is skipped is planned alike for every executor (release/test_noop_rerun.py
    # re-runs on the multiprocess one), and a process per step would only add its start-up to every step
    out = materialize(env, "*", "--executor", "in_process")
    ran = materialised_since(Path(env["DAGSTER_HOME"]), runs_before)
    # new code versions: the four that declare the rewrite gate, and six that declare every LLM stage (the bill, the
    # releases, the mamaretrieval board, the multi-passage page, the reference judges); each comes back the same
    assert ran == {
        ("variant_decisions", None),
        ("query_variants", None),
        ("robustness_per_query", None),
        ("robustness_scoreboard", None),
        ("reference_judgments", None),
        ("mamabench_release", None),
        ("mamaretrieval_release", None),
        ("mamaretrieval_leaderboard", None),
        ("multipassage_report", None),
        ("llm_plan", None),
    }, out.stdout[-5000:]
    skipped = {  # planned because an asset they read runs; each read only assets that came back the same
        *(f"variant_rankings[{r}]" for r in ("minilm", "splade-tiny")),  # one per retriever of the demo here
        "variant_holes",
        "variant_labels",
        "judge_reliability",
        "judge_confusion",
        "evaluation_report",
        "release_publication",
        "reports_index",
    }
    for name in skipped:
        assert UNCHANGED_LINE.format(name) in out.stdout, out.stdout[-5000:]
    assert f"{len(skipped)} asset partitions skipped: their inputs came back unchanged" in out.stdout
