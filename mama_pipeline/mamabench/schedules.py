"""The mamabench sources schedule: rebuild the mamabench group when an upstream source changed.

Each tick fingerprints every configured pool (SHA-256 of local files, current
commit of a hub revision) and compares it with what that pool's raw asset
recorded at its latest materialisation. Any difference, or a pool never
materialised, requests one run of what depends on those pools: their sources
(observed in the run, so the run records the new data versions), their raw
assets and everything downstream of those in the mamabench group. An unchanged
pool's raw asset does not run.
"""

import warnings
from typing import Any

import dagster as dg

from mama_pipeline.corpus import changed_sources, hub_commit, recorded_fingerprints, source_fingerprints
from mama_pipeline.mamabench._pools import POOLS
from mama_pipeline.mamabench.assets import raw_key, source_key
from mama_pipeline.resources import SettingsResource
from mama_pipeline.settings import PipelineSettings

with warnings.catch_warnings():  # include_sources is beta in Dagster 1.13
    warnings.simplefilter("ignore", dg.BetaWarning)
    MAMABENCH = dg.AssetSelection.groups("mamabench", include_sources=True)


def latest_metadata(instance: dg.DagsterInstance, key: str) -> dict[str, Any] | None:
    event = instance.get_latest_materialization_event(dg.AssetKey(key))
    if event is None or event.asset_materialization is None:
        return None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def check_mamabench_sources(context: dg.ScheduleEvaluationContext, settings: SettingsResource):
    """One tick: every source's fingerprint against the one its raw asset recorded."""
    s = settings.get()
    current = {
        pool.name: source_fingerprints(getattr(s.mamabench.sources, pool.name), s.resolve, hub_commit) for pool in POOLS
    }
    recorded = {}
    for pool in POOLS:
        meta = latest_metadata(context.instance, raw_key(pool))
        recorded[pool.name] = None if meta is None else recorded_fingerprints(meta)
    changed = changed_sources(current, recorded)
    if not changed:
        return dg.SkipReason(f"all {len(current)} mamabench sources unchanged since their last materialisation")
    pools = [p for p in POOLS if p.name in changed]
    affected = dg.AssetSelection.assets(*(raw_key(p) for p in pools)).downstream() & MAMABENCH
    keys = affected.resolve(context.repository_def.asset_graph) | {dg.AssetKey(source_key(p)) for p in pools}
    return dg.RunRequest(  # no run key, so a failed rebuild is retried at the next tick
        asset_selection=sorted(keys, key=lambda k: k.to_user_string()),
        tags={"mama/trigger": "mamabench_sources_schedule", "mama/changed_sources": ",".join(changed)},
    )


def mamabench_sources_schedule(settings: PipelineSettings) -> dg.ScheduleDefinition:
    """The schedule, on ``mamabench.sources_cron``."""
    return dg.schedule(
        name="mamabench_sources_schedule",
        cron_schedule=settings.mamabench.sources_cron,
        target=MAMABENCH,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description="Checks mamabench's upstream files (hashes, hub revisions) against the raw assets' last "
        "materialisation and requests the changed pools' sources, raw assets and what depends on them.",
    )(check_mamabench_sources)
