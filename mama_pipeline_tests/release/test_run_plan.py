"""Selections crossing partitions definitions are cut into runs in dependency order, as a backfill would."""

import dagster as dg

from mama_pipeline.run_plan import execute_plan, plan_runs

RETRIEVERS = dg.StaticPartitionsDefinition(["bm25", "dense"])
SHARDS = dg.StaticPartitionsDefinition(["shard_000", "shard_001"])
ORDER: list[str] = []


def _record(name: str, context=None) -> None:
    ORDER.append(name if context is None or not context.has_partition_key else f"{name}[{context.partition_key}]")


@dg.multi_asset(outs={"chunks": dg.AssetOut(), "issues": dg.AssetOut()})
def corpus():
    _record("corpus")
    yield dg.Output(1, output_name="chunks")
    yield dg.Output(1, output_name="issues")


@dg.asset(deps=["chunks"])
def queries() -> None:
    _record("queries")


@dg.asset(partitions_def=RETRIEVERS, deps=[queries])
def rankings(context: dg.AssetExecutionContext) -> None:
    _record("rankings", context)


@dg.asset(deps=[rankings])
def pool() -> None:
    _record("pool")


@dg.asset(partitions_def=SHARDS, deps=[pool])
def labels(context: dg.AssetExecutionContext) -> None:
    _record("labels", context)


@dg.asset(deps=[labels, "issues"])
def release() -> None:
    _record("release")


DEFS = dg.Definitions(
    assets=[corpus, queries, rankings, pool, labels, release], resources={"io_manager": dg.mem_io_manager}
)


def names(step) -> list[str]:
    return [k.to_user_string() for k in step.asset_keys]


def test_plan_groups_by_partitions_definition_in_dependency_order():
    graph = DEFS.resolve_asset_graph()
    steps = plan_runs(
        graph, [dg.AssetKey("chunks")] + [dg.AssetKey(n) for n in ("queries", "rankings", "pool", "labels", "release")]
    )
    assert [names(s) for s in steps] == [
        ["chunks", "issues", "queries"],
        ["rankings"],
        ["pool"],
        ["labels"],
        ["release"],
    ]
    assert [s.partition_keys() for s in steps] == [
        [None],
        ["bm25", "dense"],
        [None],
        ["shard_000", "shard_001"],
        [None],
    ]


def test_a_follower_starts_a_run_after_the_asset_it_reads_that_runs_for_its_own_reason():
    graph = DEFS.resolve_asset_graph()
    keys = [dg.AssetKey(n) for n in ("chunks", "queries")]
    assert [names(s) for s in plan_runs(graph, keys)] == [["chunks", "issues", "queries"]]
    # queries planned only because chunks runs: a run of its own, checked again once chunks ran
    assert [names(s) for s in plan_runs(graph, keys, [dg.AssetKey("queries")])] == [["chunks", "issues"], ["queries"]]
    # the multi-asset follows too: queries, following it, shares its run
    followers = [dg.AssetKey(n) for n in ("chunks", "issues", "queries")]
    assert [names(s) for s in plan_runs(graph, keys, followers)] == [["chunks", "issues", "queries"]]


def test_a_multi_asset_output_pulls_in_its_siblings():
    steps = plan_runs(DEFS.resolve_asset_graph(), [dg.AssetKey("issues")])
    assert [names(s) for s in steps] == [["chunks", "issues"]]


def test_execute_plan_materialises_every_partition_after_its_parents():
    ORDER.clear()
    graph = DEFS.resolve_asset_graph()
    steps = plan_runs(graph, graph.materializable_asset_keys)
    with dg.instance_for_test() as instance:
        results = execute_plan(DEFS, steps, instance, tags={"mama/trigger": "test"})
        assert all(r.success for r in results) and len(results) == 7
        assert instance.get_run_by_id(results[0].run_id).tags["mama/trigger"] == "test"
        status = instance.get_status_by_partition(dg.AssetKey("labels"), ["shard_000", "shard_001"], SHARDS)
    assert ORDER == [
        "corpus",
        "queries",
        "rankings[bm25]",
        "rankings[dense]",
        "pool",
        "labels[shard_000]",
        "labels[shard_001]",
        "release",
    ]
    assert set(status.values()) == {dg.AssetPartitionStatus.MATERIALIZED}


def test_execute_plan_uses_the_given_loggers_and_reports_each_run():
    import logging

    seen: list[str] = []
    announced: list[tuple[int, int, str | None]] = []

    class Collect(logging.Handler):
        def emit(self, record):
            event = getattr(record, "dagster_meta", {}).get("dagster_event")
            if event is not None and event.event_type_value == "STEP_SUCCESS":
                seen.append(event.step_key)

    @dg.logger
    def collect(_init):
        log = logging.Logger("collect", level=logging.DEBUG)
        log.addHandler(Collect())
        return log

    ORDER.clear()
    steps = plan_runs(DEFS.resolve_asset_graph(), [dg.AssetKey("queries"), dg.AssetKey("rankings")])
    with dg.instance_for_test() as instance:
        results = execute_plan(
            DEFS,
            steps,
            instance,
            logger_defs={"collect": collect},
            on_run=lambda n, total, step, key: announced.append((n, total, key)),
        )
    assert all(r.success for r in results)
    assert announced == [(1, 3, None), (2, 3, "bm25"), (3, 3, "dense")]
    assert seen == ["queries", "rankings", "rankings"]


def _materialised(instance) -> set[str]:
    out = set()
    for key in instance.get_asset_keys():
        for record in instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=100).records:
            part = record.partition_key
            out.add(key.to_user_string() + (f"[{part}]" if part else ""))
    return out


def test_a_failed_run_stops_only_what_depends_on_it():
    from mama_pipeline_tests.release import branch_failure_defs as bf

    graph = bf.defs.resolve_asset_graph()
    steps = plan_runs(graph, graph.materializable_asset_keys)
    # the failing step runs before the independent branch: the cut must not stop the branch
    assert [names(s) for s in steps] == [["root"], ["a_fails"], ["a_after"], ["b_branch"], ["b_end", "z_joint"]]
    skipped = []
    with dg.instance_for_test() as instance:
        results = execute_plan(bf.defs, steps, instance, raise_on_error=False, on_skip=skipped.append)
        done = _materialised(instance)
    assert [r.success for r in results] == [True, True, False, True, True, True]  # root, a_fails x2, b_branch x2, b_end
    assert done == {"root", "a_fails[s0]", "b_branch[bm25]", "b_branch[dense]", "b_end"}
    assert [(names(s), {k.path[0]: v.path[0] for k, v in s.because.items()}) for s in skipped] == [
        (["a_after"], {"a_after": "a_fails"}),
        (["z_joint"], {"z_joint": "a_fails"}),
    ]


def test_cut_failed_leaves_out_a_whole_multi_asset():
    from mama_pipeline.run_plan import RunStep, cut_failed

    graph = DEFS.resolve_asset_graph()
    step = RunStep((dg.AssetKey("chunks"), dg.AssetKey("issues"), dg.AssetKey("queries")), None)
    kept, because = cut_failed(graph, step, {dg.AssetKey("issues")})
    assert kept == RunStep((dg.AssetKey("chunks"), dg.AssetKey("issues"), dg.AssetKey("queries")), None)
    assert because == {}  # a failure of the same run is Dagster's to skip; only earlier runs' failures cut
    kept, because = cut_failed(
        graph, RunStep((dg.AssetKey("pool"), dg.AssetKey("release")), None), {dg.AssetKey("issues")}
    )
    assert kept == RunStep((dg.AssetKey("pool"),), None) and because == {dg.AssetKey("release"): dg.AssetKey("issues")}


def test_a_selection_brings_the_assets_its_checks_read():
    from mama_pipeline.definitions import defs
    from mama_pipeline.run_plan import check_inputs, selected_keys

    graph = defs.resolve_asset_graph()
    keys = selected_keys(defs, "+key:judgments")
    added = check_inputs(graph, keys)
    assert dg.AssetKey("judging_failures") not in keys
    assert added[dg.AssetKey("judging_failures")].to_user_string() == "judgments:every_pooled_pair_labelled_or_failed"
    assert check_inputs(graph, keys | set(added)) == {}  # nothing more to bring


def test_every_asset_selected_alone_makes_runs_dagster_can_build():
    """mama-pipeline materialize --select X, for every asset X: the runs (X's whole step, the assets its checks
    read) are each a valid Dagster asset selection; the Dagster CLI's check passes X or names the step's rest."""
    from mama_pipeline.definitions import PartOfAStep, dagster_cli_check, defs
    from mama_pipeline.run_plan import check_inputs, expand_selection

    graph = defs.resolve_asset_graph()
    cli = ["/venv/bin/dagster", "asset", "materialize", "-m", "mama_pipeline.definitions", "--select"]
    together = 0
    for key in sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string()):
        keys = {key} | set(check_inputs(graph, {key}))
        for step in plan_runs(graph, keys):
            job = defs.resolve_implicit_job_def_def_for_assets(list(step.asset_keys))
            job.get_subset(asset_selection=set(step.asset_keys))  # raises DagsterInvalidSubsetError when invalid
        whole = expand_selection(graph, {key})
        try:
            dagster_cli_check(defs, [*cli, key.to_user_string()], {"DAGSTER_HOME": "/h"})
            assert whole == {key}
        except PartOfAStep as exc:
            together += 1
            assert whole != {key} and all(k.to_user_string() in str(exc) for k in whole)
    assert together >= 2  # corpus_chunks and corpus_issues at least
