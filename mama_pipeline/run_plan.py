"""Run a selection of assets whose partitions differ, in dependency order, as Dagster's backfills do.

One Dagster run may hold assets of one partitions definition only. A selection
such as "the corpus and everything downstream" crosses several (rankings per
retriever, judged labels per shard), so it is cut into steps: each step is a set
of assets with the same partitions definition (or none), run once, or once per
partition key, after every step it depends on. The steps are as few as a
topological order allows.

Without ``--all``, only what changed is planned (``changed_steps``): every observable source (the files and
servers assets read, ``common/observed_inputs.py``) is observed, then an asset partition runs when it was never
materialised, when Dagster finds it stale (its code version, ``common/code_version.py``, or an input's data
version differs from those its last materialisation recorded), when its last materialisation left LLM answers
to ask again (``*transport_failed`` > 0 in its metadata), or when something it depends on runs. An asset partition
planned only for the last reason (a follower) is checked again once the runs before it are done
(``run_independent``): when Dagster finds it fresh (the assets it depends on came back with the data versions its
last materialisation recorded: their content, ``common/content_version.py``) it is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import dagster as dg

from mama_pipeline.common.input_errors import InputError

RETRY_SUFFIXES = ("transport_failed",)  # LLM answers not got: a stage asks them again at its next run

OBSERVATION_TAGS = {"mama/trigger": "observe_inputs"}  # the runs that observe the inputs; they materialise nothing
LISTED = 40  # assets listed with their reasons in the summary
UNCHANGED = "its inputs came back unchanged"


class Planned(dict[dg.AssetKey, dict[str | None, str]]):
    """Asset -> partition key (None: unpartitioned) -> why it runs; ``followers``: the (asset, partition) pairs
    planned only because an asset they depend on runs."""

    def __init__(self) -> None:
        super().__init__()
        self.followers: set[tuple[dg.AssetKey, str | None]] = set()


@dataclass(frozen=True)
class RunStep:
    asset_keys: tuple[dg.AssetKey, ...]
    partitions_def: dg.PartitionsDefinition | None
    only: tuple[str, ...] | None = None  # the partition keys planned (None: every one)
    # (asset, partition) planned only because something they depend on runs: run only if found stale by then
    followers: frozenset[tuple[dg.AssetKey, str | None]] = frozenset()

    def partition_keys(self, instance: dg.DagsterInstance | None = None) -> list[str | None]:
        """The step's partition keys; a dynamic definition's (the submissions) are read from ``instance``."""
        if self.partitions_def is None:
            return [None]
        keys = list(self.partitions_def.get_partition_keys(dynamic_partitions_store=instance))
        return keys if self.only is None else [k for k in keys if k in self.only]


def selected_keys(defs: dg.Definitions, select: str) -> set[dg.AssetKey]:
    """The asset keys of a ``--select`` (Dagster's selection syntax); a bad one is a one-line error."""
    from dagster._core.definitions.asset_selection import DagsterInvalidAssetSelectionError

    graph = defs.resolve_asset_graph()
    if select == "*":
        return graph.materializable_asset_keys
    try:
        return dg.AssetSelection.from_coercible(select).resolve(graph)
    except (dg.DagsterInvalidSubsetError, DagsterInvalidAssetSelectionError) as exc:
        raise InputError(f"--select {select!r}: {exc}") from None


def check_inputs(graph: Any, keys: Iterable[dg.AssetKey]) -> dict[dg.AssetKey, dg.AssetCheckKey]:
    """The assets the checks of ``keys`` read that ``keys`` leave out, each with a check that reads it (e.g.
    ``judging_failures`` for ``judgments_every_pooled_pair_labelled_or_failed``), to the depth they bring."""
    selected, added = expand_selection(graph, keys), {}
    todo = list(selected)
    while todo:
        key = todo.pop()
        for check in sorted(graph.asset_check_keys, key=lambda c: c.to_user_string()):
            if check.asset_key != key:
                continue
            for parent in graph.get(check).parent_entity_keys - selected:
                if graph.has(parent) and graph.get(parent).is_materializable:
                    added[parent] = check
                    brought = expand_selection(graph, {parent})  # with the rest of its step
                    todo.extend(brought - selected)
                    selected |= brought
    return added


def _units(graph: Any, keys: set[dg.AssetKey]) -> dict[dg.AssetKey, frozenset[dg.AssetKey]]:
    """Each key -> the keys that must run with it (a non-subsettable multi-asset's outputs)."""
    out = {}
    for key in keys:
        together = {k for k in graph.get_execution_set_asset_and_check_keys(key) if isinstance(k, dg.AssetKey)}
        out[key] = frozenset(together | {key})
    return out


def expand_selection(graph: Any, keys: Iterable[dg.AssetKey]) -> set[dg.AssetKey]:
    """The keys plus those that must be materialised with them."""
    keys = set(keys)
    return set().union(*_units(graph, keys).values()) if keys else set()


def plan_runs(graph: Any, keys: Iterable[dg.AssetKey], followers: Iterable[dg.AssetKey] = ()) -> list[RunStep]:
    """Steps that materialise ``keys`` (expanded to whole multi-assets) in dependency order. A multi-asset all of
    whose assets are ``followers`` (planned only because something they read runs) starts a new step rather than
    join one that holds an asset it reads planned for a reason of its own: it is checked again once that ran."""
    selected = expand_selection(graph, keys)
    units = set(_units(graph, selected).values())
    unit_of = {k: u for u in units for k in u}
    needs = {u: {unit_of[p] for k in u for p in graph.get(k).parent_keys if p in unit_of} - {u} for u in units}
    pdef = {u: graph.get(min(u, key=lambda k: k.to_user_string())).partitions_def for u in units}
    name = {u: min(k.to_user_string() for k in u) for u in units}
    following = {u for u in units if u <= set(followers)}
    done: set[frozenset] = set()
    steps: list[RunStep] = []
    current: list[frozenset] = []

    def joins(u: frozenset) -> bool:
        return pdef[u] == pdef[current[0]] and not (
            u in following and any(p not in following for p in needs[u] & set(current))
        )

    while len(done) < len(units):
        ready = sorted((u for u in units - done - set(current) if needs[u] <= done), key=name.get)
        same = [u for u in ready if current and joins(u)]
        if same:
            current.append(same[0])
            done.add(same[0])
            continue
        if current:
            steps.append(_step(current, pdef[current[0]]))
            current = []
            continue
        current = [ready[0]]
        done.add(ready[0])
    if current:
        steps.append(_step(current, pdef[current[0]]))
    return steps


def _step(units: list[frozenset], partitions_def: dg.PartitionsDefinition | None) -> RunStep:
    keys = sorted(set().union(*units), key=lambda k: k.to_user_string())
    return RunStep(tuple(keys), partitions_def)


@dataclass(frozen=True)
class SkippedRun:
    """Assets of a planned run left out because an asset they depend on failed to materialise."""

    asset_keys: tuple[dg.AssetKey, ...]
    partition_keys: tuple[str | None, ...]
    because: dict[dg.AssetKey, dg.AssetKey]  # each skipped asset -> an asset it depends on that a run failed to make


def _ancestors(graph: Any, key: dg.AssetKey) -> set[dg.AssetKey]:
    seen: set[dg.AssetKey] = set()
    todo = list(graph.get(key).parent_keys)
    while todo:
        parent = todo.pop()
        if parent not in seen and graph.has(parent):
            seen.add(parent)
            todo.extend(graph.get(parent).parent_keys)
    return seen


def cut_failed(
    graph: Any, step: RunStep, failed: set[dg.AssetKey]
) -> tuple[RunStep | None, dict[dg.AssetKey, dg.AssetKey]]:
    """``step`` without its assets downstream of a ``failed`` one (whole multi-assets: a member's failed
    ancestor leaves out the others), and each asset left out -> a failed asset it depends on."""
    because: dict[dg.AssetKey, dg.AssetKey] = {}
    for key in step.asset_keys:
        hit = sorted(_ancestors(graph, key) & failed, key=lambda k: k.to_user_string())
        if hit:
            because[key] = hit[0]
    for key, together in _units(graph, set(step.asset_keys)).items():
        cause = next((because[k] for k in sorted(together, key=lambda k: k.to_user_string()) if k in because), None)
        if cause is not None:
            because.setdefault(key, cause)
    kept = tuple(k for k in step.asset_keys if k not in because)
    return (replace(step, asset_keys=kept) if kept else None), because


@dataclass(frozen=True)
class UnchangedRun:
    """Assets of a planned run left out because, once the runs before it were done, nothing they read changed."""

    asset_keys: tuple[dg.AssetKey, ...]
    partition_key: str | None
    reason: str  # UNCHANGED


def _stale_resolver(graph: Any, instance: dg.DagsterInstance) -> Any:
    """Dagster's stale status resolver (the UI's) over the instance as it is now."""
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._time import get_current_datetime

    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    resolver = CachingStaleStatusResolver(instance, graph, view)
    resolver.instance_queryer.prefetch_asset_records(graph.get_all_asset_keys())  # one query, not one per asset
    return resolver


def still_planned(
    graph: Any, step: RunStep, partition_key: str | None, instance: dg.DagsterInstance
) -> tuple[RunStep | None, list[UnchangedRun]]:
    """``step``'s run of ``partition_key`` without the followers found fresh now (their inputs' data versions are
    those their last materialisation recorded); a follower stays when an asset it depends on stays in the run, and
    a multi-asset stays whole."""
    from dagster._core.definitions.data_version import StaleStatus

    followers = {k for k in step.asset_keys if (k, partition_key) in step.followers}
    if not followers:
        return step, []
    resolver = _stale_resolver(graph, instance)
    units = _units(graph, set(step.asset_keys))

    def needed(key: dg.AssetKey) -> bool:
        return resolver.get_status(key, partition_key) != StaleStatus.FRESH

    keep = (set(step.asset_keys) - followers) | {k for k in followers if needed(k)}
    grown = True
    while grown:  # what reads a kept asset in the same run, and a kept asset's multi-asset, stay too
        more = {k for k in followers - keep if graph.get(k).parent_keys & keep or units[k] & keep}
        keep |= more
        grown = bool(more)
    dropped = tuple(k for k in step.asset_keys if k not in keep)
    if not dropped:
        return step, []
    kept = tuple(k for k in step.asset_keys if k in keep)
    return (replace(step, asset_keys=kept) if kept else None), [UnchangedRun(dropped, partition_key, UNCHANGED)]


def run_independent(
    graph: Any,
    steps: list[RunStep],
    instance: dg.DagsterInstance | None,
    run: Callable[[RunStep, str | None], set[dg.AssetKey]],
    on_skip: Callable[[SkippedRun], None] | None = None,
    on_unchanged: Callable[[UnchangedRun], None] | None = None,
) -> set[dg.AssetKey]:
    """Make every run of ``steps`` with ``run(step, partition_key)``, which returns the step's assets it did not
    materialise (empty: the run succeeded). A failure stops only what depends on it: a later run leaves out
    the assets downstream of a failed one (``on_skip`` is told) and the independent runs go on; the other
    partitions of a failed run's step still run. Before each run its followers are checked again
    (``still_planned``): those found fresh are left out (``on_unchanged`` is told), and a run left empty is not
    made. Returns the assets not materialised because of a failure, skipped ones included."""
    failed: set[dg.AssetKey] = set()  # not materialised by their run
    skipped: set[dg.AssetKey] = set()
    for planned in steps:
        step, because = cut_failed(graph, planned, failed)
        if because:
            skipped |= set(because)
            if on_skip is not None:
                keys = tuple(k for k in planned.asset_keys if k in because)
                on_skip(SkippedRun(keys, tuple(planned.partition_keys(instance)), because))
        if step is None:
            continue
        for partition_key in step.partition_keys(instance):
            kept, unchanged = still_planned(graph, step, partition_key, instance)
            for skip in unchanged:
                if on_unchanged is not None:
                    on_unchanged(skip)
            if kept is None:
                continue
            failed |= run(kept, partition_key) & set(kept.asset_keys)
    return failed | skipped


def execute_plan(
    defs: dg.Definitions,
    steps: list[RunStep],
    instance: dg.DagsterInstance,
    tags: Mapping[str, str] | None = None,
    logger_defs: Mapping[str, dg.LoggerDefinition] | None = None,
    on_run: Callable[[int, int, RunStep, str | None], None] | None = None,
    raise_on_error: bool = True,
    on_skip: Callable[[SkippedRun], None] | None = None,
    on_unchanged: Callable[[UnchangedRun], None] | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Run every step in process (one run per partition key); a failed run stops only the runs' assets that
    depend on it (``run_independent``; ``on_skip`` is told of each left out), and followers found fresh are left
    out (``on_unchanged`` is told).

    ``logger_defs`` replace the jobs' loggers (every logger gets every event);
    ``on_run(n, total, step, partition_key)`` is called before each run.
    """
    total = sum(len(step.partition_keys(instance)) for step in steps)
    run_config = {"loggers": {name: {} for name in logger_defs}} if logger_defs else None
    results: list[dg.ExecuteInProcessResult] = []

    def run(step: RunStep, partition_key: str | None) -> set[dg.AssetKey]:
        job = defs.resolve_implicit_job_def_def_for_assets(list(step.asset_keys))
        if logger_defs is not None:
            job = job.with_logger_defs(dict(logger_defs))
        if on_run is not None:
            on_run(len(results) + 1, total, step, partition_key)
        result = job.execute_in_process(
            instance=instance,
            asset_selection=list(step.asset_keys),
            partition_key=partition_key,
            tags=dict(tags or {}),
            raise_on_error=raise_on_error,
            run_config=run_config,
        )
        results.append(result)
        if result.success:
            return set()
        return set(step.asset_keys) - {e.asset_key for e in result.get_asset_materialization_events()}

    run_independent(defs.resolve_asset_graph(), steps, instance, run, on_skip, on_unchanged)
    return results


def not_materialised_by_run(instance: dg.DagsterInstance, run_id: str, keys: Iterable[dg.AssetKey]) -> set[dg.AssetKey]:
    """Of ``keys``, those the run (made by another process) did not materialise."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    return set(keys) - {r.event_log_entry.dagster_event.asset_key for r in records}


def observe_inputs(defs: dg.Definitions, instance: dg.DagsterInstance) -> int:
    """Observe every observable source asset (one in-process run); returns how many were observed."""
    from dagster._core.definitions.observe import observe

    from mama_pipeline.resources import shared_resources

    sources = [a for a in defs.assets or [] if isinstance(a, dg.SourceAsset) and a.is_observable]
    if sources:
        observe(
            sources,
            instance=instance,
            resources=shared_resources(),
            tags=OBSERVATION_TAGS,
            run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},  # an input not observed
        )
    return len(sources)


def _retry_reason(queryer: Any, key: dg.AssetKey, partition: str | None, suffixes) -> str | None:
    """Why the asset partition runs again for its LLM answers (from its latest materialisation's metadata, as the
    stale resolver's ``queryer`` already holds it), or None."""
    from dagster._core.definitions.events import AssetKeyPartitionKey

    record = queryer.get_latest_materialization_or_observation_record(AssetKeyPartitionKey(key, partition))
    if record is None or record.asset_materialization is None:
        return None
    meta = record.asset_materialization.metadata
    due = sum(int(v.value) for k, v in meta.items() if k.endswith(suffixes) and isinstance(v.value, int))
    return f"{due} LLM answers to ask again" if due else None


def _upstream_reason(graph: Any, key: dg.AssetKey, partition: str | None, planned: Planned) -> str | None:
    node = graph.get(key)
    for parent in sorted(node.parent_keys, key=lambda k: k.to_user_string()):
        runs = planned.get(parent)
        if not runs:
            continue
        same = node.partitions_def is not None and graph.get(parent).partitions_def == node.partitions_def
        if not same or partition in runs:
            return f"{parent.to_user_string()} runs"
    return None


def changed_partitions(
    graph: Any, keys: Iterable[dg.AssetKey], instance: dg.DagsterInstance, retry_parse_failed: bool = False
) -> Planned:
    """The asset partitions of ``keys`` (expanded to whole multi-assets) that must run, each with its reason, and
    the followers among them (planned only because something they depend on runs).

    Sources must have been observed first (``observe_inputs``). ``retry_parse_failed``: answers cached as
    unparseable are asked again too, so a stage that has them runs.
    """
    from dagster._core.definitions.data_version import StaleStatus

    resolver = _stale_resolver(graph, instance)
    suffixes = (*RETRY_SUFFIXES, "parse_failed") if retry_parse_failed else RETRY_SUFFIXES
    selected = expand_selection(graph, keys)
    planned = Planned()

    def own_reason(key: dg.AssetKey, partition: str | None) -> str | None:
        status = resolver.get_status(key, partition)
        if status == StaleStatus.MISSING:
            return "never materialised"
        if status == StaleStatus.STALE:
            causes = resolver.get_stale_root_causes(key, partition)
            return "; ".join(sorted({f"{c.asset_key.to_user_string()} {c.reason}" for c in causes}))
        return _retry_reason(resolver.instance_queryer, key, partition, suffixes)

    for key in graph.toposorted_asset_keys:
        if key not in selected:
            continue
        for partition in RunStep((key,), graph.get(key).partitions_def).partition_keys(instance):
            upstream = _upstream_reason(graph, key, partition, planned)
            own = own_reason(key, partition)
            if upstream and not own:
                planned.followers.add((key, partition))
            if upstream or own:
                planned.setdefault(key, {})[partition] = upstream or own
    return planned


def planned_steps(
    graph: Any, planned: Mapping[dg.AssetKey, Mapping[str | None, str]], followers: Iterable = ()
) -> list[RunStep]:
    """The runs of ``plan_runs`` over the planned assets, each partitioned run cut to the planned partitions and
    told its ``followers`` (``Planned.followers``; ``plan_runs`` starts a new step for them after what they read)."""
    followers = set(followers)
    following = {k for k, parts in planned.items() if all((k, p) in followers for p in parts)}
    steps = plan_runs(graph, set(planned), following)
    out = []
    for step in steps:
        if step.partitions_def is not None:
            only = {p for k in step.asset_keys for p in planned.get(k, {})} - {None}
            step = replace(step, only=tuple(sorted(only)))
        out.append(replace(step, followers=frozenset(f for f in followers if f[0] in step.asset_keys)))
    return out


def changed_steps(
    defs: dg.Definitions,
    keys: set[dg.AssetKey],
    instance: dg.DagsterInstance,
    retry_parse_failed: bool = False,
    say: Callable[[str], None] = print,
) -> list[RunStep]:
    """Observe the sources, then plan the runs of what changed in ``keys``; ``say`` gets a summary (each asset
    that runs, with why, how many only if what they read comes back changed, and how many are unchanged)."""
    graph = defs.resolve_asset_graph()
    observed = observe_inputs(defs, instance)
    planned = changed_partitions(graph, keys, instance, retry_parse_failed)
    selected = expand_selection(graph, keys)
    total = sum(len(RunStep((k,), graph.get(k).partitions_def).partition_keys(instance)) for k in selected)
    runs = sum(len(v) for v in planned.values())
    say(
        f"{observed} inputs observed; {runs} of {total} asset partitions ({len(planned)} of {len(selected)} "
        f"assets) to run ({len(planned.followers)} of them only if what they read comes back changed), "
        f"{total - runs} unchanged since their last materialisation"
    )
    shown = sorted(planned, key=lambda k: k.to_user_string())
    for key in shown[:LISTED]:
        parts = planned[key]
        where = "" if list(parts) == [None] else f" [{', '.join(str(p) for p in parts)}]"
        say(f"  {key.to_user_string()}{where}: {'; '.join(sorted(set(parts.values())))}")
    if len(shown) > LISTED:
        say(f"  ... and {len(shown) - LISTED} more assets")
    return planned_steps(graph, planned, planned.followers)
