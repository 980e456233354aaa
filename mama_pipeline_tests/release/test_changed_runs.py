"""Only what changed is planned: Dagster's code and data versions, observed inputs, owed LLM answers, partitions.

A small pipeline on a real (temporary, SQLite) Dagster instance: two observed input files, a multi-asset,
per-retriever partitions, dynamic submission partitions, a stage that reports LLM answers it could not get, and
an asset that reads the whole store.
"""

from __future__ import annotations

import dagster as dg
import pytest

from mama_pipeline.common.observed_inputs import observed_input, path_fingerprint
from mama_pipeline.run_plan import (
    UNCHANGED,
    changed_partitions,
    execute_plan,
    observe_inputs,
    planned_steps,
)

INPUTS = {}  # name -> path of the file the observed input fingerprints (set by the fixture)
OWED = {"transport_failed": 0, "parse_failed": 0}  # what the judging stage reports at its next run
RETRIEVERS = dg.StaticPartitionsDefinition(["bm25", "dense"])
SUBMISSIONS = dg.DynamicPartitionsDefinition(name="subs")

corpus_file = observed_input("corpus_file", "default", "the corpus file", lambda s: path_fingerprint(INPUTS["corpus"]))
pool_file = observed_input("pool_file", "default", "an upstream pool", lambda s: path_fingerprint(INPUTS["pool"]))
PARAMS = {}  # retriever -> its parameters, the partitioned observed input's versions (set by the fixture)
retriever_params = observed_input(
    "retriever_params", "default", "each retriever's parameters", lambda s: dict(PARAMS), RETRIEVERS
)


@dg.multi_asset(deps=["corpus_file"], outs={"chunks": dg.AssetOut(), "issues": dg.AssetOut()})
def corpus():
    yield dg.Output(None, output_name="chunks")
    yield dg.Output(None, output_name="issues")


@dg.asset(deps=["pool_file"])
def items() -> None:
    pass


RANKED = {}  # retriever -> the data version its ranking comes back with (set by the fixture): its content's


@dg.asset(partitions_def=RETRIEVERS, deps=["chunks", "retriever_params"])
def rankings(context) -> dg.Output:
    return dg.Output(None, data_version=dg.DataVersion(RANKED[context.partition_key]))


@dg.asset(deps=[rankings])
def judged() -> dg.MaterializeResult:
    return dg.MaterializeResult(
        metadata={"judge/transport_failed": OWED["transport_failed"], "judge/parse_failed": OWED["parse_failed"]}
    )


@dg.asset(deps=[judged])
def scoreboard() -> None:
    pass


@dg.asset(partitions_def=SUBMISSIONS, deps=[judged])
def submission_scores() -> None:
    pass


@dg.asset(deps=[submission_scores, scoreboard])
def leaderboard() -> None:
    pass


ASSETS = [corpus, items, rankings, judged, scoreboard, submission_scores, leaderboard]


class NoSettings:
    def get(self) -> None:
        return None


def defs_at(code_version: str) -> dg.Definitions:
    defs = dg.Definitions(
        assets=[corpus_file, pool_file, retriever_params, *ASSETS],
        resources={"io_manager": dg.mem_io_manager, "settings": dg.ResourceDefinition.none_resource()},
    )
    return defs.permissive_map_resolved_asset_specs(
        func=lambda spec: spec.replace_attributes(code_version=code_version), selection=None
    )


@pytest.fixture
def pipeline(tmp_path, monkeypatch):
    INPUTS.update(corpus=tmp_path / "chunks.txt", pool=tmp_path / "pool.jsonl")
    INPUTS["corpus"].write_text("chunk one\nchunk two\n")
    INPUTS["pool"].write_text('{"q": 1}\n')
    OWED.update(transport_failed=0, parse_failed=0)
    PARAMS.update(bm25="k1=0.9", dense="model=a")
    RANKED.update(bm25="ranking-1", dense="ranking-2")
    # observe_inputs gives the sources the project's resources; these sources read INPUTS, not the settings
    monkeypatch.setattr("mama_pipeline.resources.shared_resources", lambda *a: {"settings": NoSettings()})
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("subs", ["sub-1"])
        yield instance


def plan(defs: dg.Definitions, instance, retry_parse_failed: bool = False) -> dict[str, dict]:
    graph = defs.resolve_asset_graph()
    observe_inputs(defs, instance)
    planned = changed_partitions(graph, graph.materializable_asset_keys, instance, retry_parse_failed)
    return {k.to_user_string(): v for k, v in planned.items()}


def run(defs: dg.Definitions, instance, planned: dict[str, dict]) -> None:
    graph = defs.resolve_asset_graph()
    steps = planned_steps(graph, {dg.AssetKey(k): v for k, v in planned.items()})
    assert all(r.success for r in execute_plan(defs, steps, instance))


def materialisations(instance, key: str) -> int:
    return len(instance.fetch_materializations(dg.AssetKey(key), limit=100).records)


def test_a_first_run_plans_everything_and_a_second_nothing(pipeline):
    defs = defs_at("v1")
    first = plan(defs, pipeline)
    assert set(first) == {
        "chunks",
        "issues",
        "items",
        "rankings",
        "judged",
        "scoreboard",
        "submission_scores",
        "leaderboard",
    }
    assert first["items"] == {None: "never materialised"}
    assert first["rankings"] == {"bm25": "chunks runs", "dense": "chunks runs"}
    run(defs, pipeline, first)
    assert plan(defs, pipeline) == {}
    assert plan(defs_at("v1"), pipeline) == {}  # definitions loaded again (a new command) agree


def test_a_changed_input_plans_its_readers_and_what_depends_on_them_only(pipeline):
    defs = defs_at("v1")
    run(defs, pipeline, plan(defs, pipeline))
    INPUTS["corpus"].write_text("chunk one\nchunk two, edited\n")
    changed = plan(defs, pipeline)
    assert changed["chunks"] == {None: "corpus_file has a new data version"}
    assert changed["rankings"] == {"bm25": "chunks runs", "dense": "chunks runs"}
    assert changed["submission_scores"] == {"sub-1": "judged runs"}
    assert "items" not in changed  # the pool file did not change
    before = materialisations(pipeline, "items")
    run(defs, pipeline, changed)
    assert materialisations(pipeline, "items") == before and plan(defs, pipeline) == {}
    INPUTS["corpus"].write_text("chunk one\nchunk two\n")  # reverted: a change again, not a return to old labels
    assert "chunks" in plan(defs, pipeline)


def test_a_changed_partition_of_an_input_plans_that_partition_and_what_depends_on_it(pipeline):
    defs = defs_at("v1")
    run(defs, pipeline, plan(defs, pipeline))
    PARAMS["bm25"] = "k1=1.2"
    changed = plan(defs, pipeline)
    assert changed == {
        "rankings": {"bm25": "retriever_params has a new data version"},
        "judged": {None: "rankings runs"},
        "scoreboard": {None: "judged runs"},
        "submission_scores": {"sub-1": "judged runs"},
        "leaderboard": {None: "scoreboard runs"},
    }
    graph = defs.resolve_asset_graph()
    steps = planned_steps(graph, {dg.AssetKey(k): v for k, v in changed.items()})
    assert [s.partition_keys(pipeline) for s in steps if s.partitions_def == RETRIEVERS] == [["bm25"]]
    run(defs, pipeline, changed)
    assert plan(defs, pipeline) == {}


def test_what_reads_only_a_ranking_that_came_back_unchanged_is_skipped(pipeline):
    defs = defs_at("v1")
    graph = defs.resolve_asset_graph()
    run(defs, pipeline, plan(defs, pipeline))
    PARAMS["bm25"] = "k1=1.2"  # bm25 runs again; its ranking comes back as it was (RANKED unchanged)
    observe_inputs(defs, pipeline)
    planned = changed_partitions(graph, graph.materializable_asset_keys, pipeline)
    key = dg.AssetKey
    assert planned.followers == {
        (key("judged"), None),
        (key("scoreboard"), None),
        (key("submission_scores"), "sub-1"),
        (key("leaderboard"), None),
    }
    names = ("rankings", "judged", "scoreboard", "submission_scores", "leaderboard")
    before = {k: materialisations(pipeline, k) for k in names}
    unchanged = []
    steps = planned_steps(graph, planned, planned.followers)
    assert all(r.success for r in execute_plan(defs, steps, pipeline, on_unchanged=unchanged.append))
    assert [(tuple(k.to_user_string() for k in u.asset_keys), u.partition_key, u.reason) for u in unchanged] == [
        (("judged", "scoreboard"), None, UNCHANGED),
        (("submission_scores",), "sub-1", UNCHANGED),
        (("leaderboard",), None, UNCHANGED),
    ]
    after = {k: materialisations(pipeline, k) for k in names}
    assert after == {**before, "rankings": before["rankings"] + 1}
    assert plan(defs, pipeline) == {}  # the plan and Dagster agree: nothing is stale

    PARAMS["bm25"], RANKED["bm25"] = "k1=1.5", "ranking-3"  # now the ranking changes: its readers run
    unchanged.clear()
    again = plan(defs, pipeline)
    steps = planned_steps(graph, {key(k): v for k, v in again.items()}, planned.followers)
    assert all(r.success for r in execute_plan(defs, steps, pipeline, on_unchanged=unchanged.append))
    assert unchanged == []
    assert materialisations(pipeline, "leaderboard") == after["leaderboard"] + 1


def test_a_new_code_version_plans_every_asset(pipeline):
    run(defs_at("v1"), pipeline, plan(defs_at("v1"), pipeline))
    changed = plan(defs_at("v2"), pipeline)
    assert changed["items"] == {None: "items has a new code version"}
    assert changed["rankings"] == {"bm25": "chunks runs", "dense": "chunks runs"}
    assert len(changed) == 8


def test_a_new_submission_plans_its_partition_and_the_leaderboard_only(pipeline):
    defs = defs_at("v1")
    run(defs, pipeline, plan(defs, pipeline))
    pipeline.add_dynamic_partitions("subs", ["sub-2"])
    changed = plan(defs, pipeline)
    assert changed == {
        "submission_scores": {"sub-2": "never materialised"},
        "leaderboard": {None: "submission_scores runs"},
    }
    graph = defs.resolve_asset_graph()
    steps = planned_steps(graph, {dg.AssetKey(k): v for k, v in changed.items()})
    assert [s.partition_keys(pipeline) for s in steps if s.partitions_def is not None] == [["sub-2"]]
    before = materialisations(pipeline, "submission_scores")
    run(defs, pipeline, changed)
    assert materialisations(pipeline, "submission_scores") == before + 1  # sub-1 was not run again


def test_answers_the_judge_could_not_get_are_asked_again_at_the_next_run(pipeline):
    defs = defs_at("v1")
    OWED["transport_failed"] = 3
    run(defs, pipeline, plan(defs, pipeline))
    again = plan(defs, pipeline)
    assert again["judged"] == {None: "3 LLM answers to ask again"}
    assert again["scoreboard"] == {None: "judged runs"} and "items" not in again
    OWED["transport_failed"], OWED["parse_failed"] = 0, 2
    run(defs, pipeline, again)
    assert plan(defs, pipeline) == {}  # unparseable answers stay cached as failed
    assert plan(defs, pipeline, retry_parse_failed=True)["judged"] == {None: "2 LLM answers to ask again"}


def test_an_input_that_cannot_be_observed_runs_its_readers(pipeline):
    defs = defs_at("v1")
    run(defs, pipeline, plan(defs, pipeline))
    INPUTS["pool"].unlink()
    changed = plan(defs, pipeline)
    assert changed["items"] == {None: "pool_file has a new data version"}
    assert "chunks" not in changed
