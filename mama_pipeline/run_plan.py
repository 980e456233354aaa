"""Run a selection of assets whose partitions differ, in dependency order, as Dagster's backfills do.

One Dagster run may hold assets of one partitions definition only. A selection
such as "the corpus and everything downstream" crosses several (rankings per
retriever, judged labels per shard), so it is cut into steps: each step is a set
of assets with the same partitions definition (or none), run once, or once per
partition key, after every step it depends on. The steps are as few as a
topological order allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg

from mama_pipeline.common.input_errors import InputError


@dataclass(frozen=True)
class RunStep:
    asset_keys: tuple[dg.AssetKey, ...]
    partitions_def: dg.PartitionsDefinition | None

    def partition_keys(self, instance: dg.DagsterInstance | None = None) -> list[str | None]:
        """The step's partition keys; a dynamic definition's (the submissions) are read from ``instance``."""
        if self.partitions_def is None:
            return [None]
        return list(self.partitions_def.get_partition_keys(dynamic_partitions_store=instance))


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


def plan_runs(graph: Any, keys: Iterable[dg.AssetKey]) -> list[RunStep]:
    """Steps that materialise ``keys`` (expanded to whole multi-assets) in dependency order."""
    selected = expand_selection(graph, keys)
    units = set(_units(graph, selected).values())
    unit_of = {k: u for u in units for k in u}
    needs = {u: {unit_of[p] for k in u for p in graph.get(k).parent_keys if p in unit_of} - {u} for u in units}
    pdef = {u: graph.get(min(u, key=lambda k: k.to_user_string())).partitions_def for u in units}
    name = {u: min(k.to_user_string() for k in u) for u in units}
    done: set[frozenset] = set()
    steps: list[RunStep] = []
    current: list[frozenset] = []
    while len(done) < len(units):
        ready = sorted((u for u in units - done - set(current) if needs[u] <= done), key=name.get)
        same = [u for u in ready if current and pdef[u] == pdef[current[0]]]
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


def materialize_commands(
    steps: list[RunStep], module: str, run_config: str | None = None, instance: dg.DagsterInstance | None = None
) -> list[list[str]]:
    """``dagster asset materialize`` arguments for every run of the plan (multiprocess runs on the instance);
    ``run_config``: a run config file passed to each (``-c``)."""
    commands = []
    config = ["-c", run_config] if run_config else []
    for step in steps:
        select = ",".join(k.to_user_string() for k in step.asset_keys)
        for partition_key in step.partition_keys(instance):
            extra = ["--partition", partition_key] if partition_key is not None else []
            commands.append(["asset", "materialize", "-m", module, "--select", select, *extra, *config])
    return commands


def execute_plan(
    defs: dg.Definitions,
    steps: list[RunStep],
    instance: dg.DagsterInstance,
    tags: Mapping[str, str] | None = None,
    logger_defs: Mapping[str, dg.LoggerDefinition] | None = None,
    on_run: Callable[[int, int, RunStep, str | None], None] | None = None,
    raise_on_error: bool = True,
) -> list[dg.ExecuteInProcessResult]:
    """Run every step in process (one run per partition key); stops at the first failed run.

    ``logger_defs`` replace the jobs' loggers (every logger gets every event);
    ``on_run(n, total, step, partition_key)`` is called before each run.
    """
    total = sum(len(step.partition_keys(instance)) for step in steps)
    run_config = {"loggers": {name: {} for name in logger_defs}} if logger_defs else None
    results = []
    for step in steps:
        job = defs.resolve_implicit_job_def_def_for_assets(list(step.asset_keys))
        if logger_defs is not None:
            job = job.with_logger_defs(dict(logger_defs))
        for partition_key in step.partition_keys(instance):
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
            if not result.success:
                return results
    return results
