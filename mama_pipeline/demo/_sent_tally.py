"""Planned against sent, per LLM stage, for a materialisation: the plan's bound before the runs, the requests
the runs sent (answers and transport failures the cache recorded since they started)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

import dagster as dg

PLANNED_TAG = "mama/llm_bound"  # run tags: JSON {stage: requests} of the command that made the run
SENT_TAG = "mama/llm_sent"


def planned_bounds(config_path: str, assets: Iterable[str]) -> tuple[dict[str, int], list[str]]:
    """Per stage, the summed bounds of the selected LLM-calling ``assets`` (no exact plan: nothing is read from
    the store), and the stages whose bound is not computed, with why. Computed in a process of its own, which
    ends with it: the raw inputs the bounds read (the corpus bundle: GBs at scale) are not held by the command
    for the rest of its runs (what Python frees stays the process's)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_bounds, config_path, sorted(assets)).result()


def _bounds(config_path: str, assets: list[str]) -> tuple[dict[str, int], list[str]]:
    from mama_pipeline.plan import plan_bills

    bounds: dict[str, int] = {}
    unbounded = []
    for b in plan_bills(config_path, list(assets), exact=False):
        if b.bound is None:
            unbounded.append(f"{b.asset} · {b.stage}: {b.bound_basis}")
        else:
            bounds[b.stage] = bounds.get(b.stage, 0) + b.bound
    return bounds, unbounded


def sent_since(store, since: datetime) -> dict[str, int]:
    """Per stage, the requests sent since ``since``: answers cached (ok or unparseable) and transport failures
    recorded. A request asked again after a parse failure counts once."""
    sent: dict[str, int] = {}
    if not store.path.exists():  # nothing was sent; opening the store would create it
        return sent
    for table in ("llm_responses", "llm_failures"):
        if not store.table_exists(table):
            continue
        # the cache holds a key once (its writer keeps it unique): its rows are counted, with no set of keys to hold
        counted = "count(*)" if table == "llm_responses" else "count(DISTINCT cache_key)"
        rows = store.query(f"SELECT stage, {counted} AS n FROM {table} WHERE created_at >= ? GROUP BY stage", [since])
        for stage, n in rows.iter_rows():
            sent[stage] = sent.get(stage, 0) + int(n)
    return sent


def planned_sent_lines(bounds: dict[str, int], unbounded: list[str], sent: dict[str, int]) -> list[str]:
    """One line per stage, ``stage sent/bound``, and each stage that sent more than its bound or has none."""
    stages = sorted(set(bounds) | set(sent))
    if not stages and not unbounded:
        return []
    pairs = ", ".join(f"{s} {sent.get(s, 0):,}/{bounds[s]:,}" if s in bounds else f"{s} {sent[s]:,}/?" for s in stages)
    lines = [f"requests sent this run / planned bound, per stage: {pairs or 'none'}"]
    over = [s for s in stages if s in bounds and sent.get(s, 0) > bounds[s]]
    if over:
        lines.append(f"SENT MORE THAN THE BOUND (a bound that does not hold: report it): {', '.join(over)}")
    for line in unbounded:
        lines.append(f"no bound: {line}")
    return lines


def tag_runs(instance: dg.DagsterInstance, since: datetime, bounds: dict[str, int], sent: dict[str, int]) -> int:
    """Put the planned bounds and the sent counts on every run started since ``since`` (naive UTC); returns how
    many runs were tagged."""
    from datetime import UTC

    runs = instance.get_runs(filters=dg.RunsFilter(created_after=since.replace(tzinfo=UTC)))
    tags = {PLANNED_TAG: json.dumps(bounds, sort_keys=True), SENT_TAG: json.dumps(sent, sort_keys=True)}
    for run in runs:
        instance.add_run_tags(run.run_id, tags)
    return len(runs)
