"""The mamabench sources schedule: rebuild the mamabench group when an upstream source changed.

Each tick fingerprints every configured pool (SHA-256 of local files, current
commit of a hub revision) and compares it with what that pool's raw asset
recorded at its latest materialisation. Any difference, or a pool never
materialised, requests a run of the whole mamabench group.
"""

from typing import Any

import dagster as dg

from mama_pipeline.corpus import watch
from mama_pipeline.mamabench.assets import raw_key
from mama_pipeline.mamabench.pools import POOLS
from mama_pipeline.resources import SettingsResource
from mama_pipeline.settings import PipelineSettings

MAMABENCH = dg.AssetSelection.groups("mamabench")


def latest_metadata(instance: dg.DagsterInstance, key: str) -> dict[str, Any] | None:
    event = instance.get_latest_materialization_event(dg.AssetKey(key))
    if event is None or event.asset_materialization is None:
        return None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def check_mamabench_sources(context: dg.ScheduleEvaluationContext, settings: SettingsResource):
    """One tick: every source's fingerprint against the one its raw asset recorded."""
    s = settings.get()
    current = {
        pool.name: watch.source_fingerprints(getattr(s.mamabench.sources, pool.name), s.resolve, watch.hub_commit)
        for pool in POOLS
    }
    recorded = {}
    for pool in POOLS:
        meta = latest_metadata(context.instance, raw_key(pool))
        recorded[pool.name] = None if meta is None else watch.recorded_fingerprints(meta)
    changed = watch.changed_sources(current, recorded)
    if not changed:
        return dg.SkipReason(f"all {len(current)} mamabench sources unchanged since their last materialisation")
    return dg.RunRequest(  # the whole group; no run key, so a failed rebuild is retried at the next tick
        tags={"mama/trigger": "mamabench_sources_schedule", "mama/changed_sources": ",".join(changed)},
    )


def mamabench_sources_schedule(settings: PipelineSettings) -> dg.ScheduleDefinition:
    """The schedule, on ``release.mamabench_sources_cron``."""
    return dg.schedule(
        name="mamabench_sources_schedule",
        cron_schedule=settings.release.mamabench_sources_cron,
        target=MAMABENCH,
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description="Checks mamabench's upstream files (hashes, hub revisions) against the raw assets' last "
        "materialisation and requests the mamabench group when any changed.",
    )(check_mamabench_sources)
