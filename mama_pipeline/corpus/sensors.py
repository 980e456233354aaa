"""The corpus-version sensor: a changed corpus bundle re-runs the corpus and everything downstream.

The cursor is the bundle's last seen fingerprint (``sha256:`` of a local file,
``commit:`` of a hub revision). With no cursor yet, the fingerprint recorded by
the latest ``corpus_chunks`` materialisation is the baseline, so a bundle edited
before the sensor was switched on is still noticed. Judging asks only for pairs
without a stored label, so the resulting run re-labels the new chunks only.
"""

from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.definitions.partitions.context import partition_loading_context

from mama_pipeline.common.observed_inputs import observation
from mama_pipeline.corpus import _watch as watch
from mama_pipeline.resources import SettingsResource
from mama_pipeline.settings import PipelineSettings

CORPUS_KEY = dg.AssetKey("corpus_chunks")
CORPUS_AND_DOWNSTREAM = dg.AssetSelection.assets(CORPUS_KEY).downstream().required_multi_asset_neighbors()
TRIGGER_TAG = "mama/trigger"


def recorded_fingerprint(instance: dg.DagsterInstance, bundle_spec: str) -> str | None:
    """The bundle fingerprint the latest corpus materialisation recorded, in the sensor's format."""
    event = instance.get_latest_materialization_event(CORPUS_KEY)
    if event is None or event.asset_materialization is None:
        return None
    meta = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    if bundle_spec.startswith("hf://"):
        return f"commit:{meta['bundle_commit']}" if meta.get("bundle_commit") else None
    return f"sha256:{meta['bundle_sha256']}" if meta.get("bundle_sha256") else None


def corpus_run_request(graph: Any, fingerprint: str, instance: dg.DagsterInstance) -> dg.RunRequest:
    """One request for the corpus and everything downstream.

    A plain run when every selected asset is unpartitioned; otherwise a backfill (a run cannot mix partitions
    definitions), which the daemon runs in dependency order over every partition, the submissions' dynamic
    partitions read from ``instance``.
    """
    keys = CORPUS_AND_DOWNSTREAM.resolve(graph)
    tags = {TRIGGER_TAG: "corpus_version_sensor", "mama/corpus_fingerprint": fingerprint}
    if any(graph.get(k).partitions_def is not None for k in keys):
        with partition_loading_context(dynamic_partitions_store=instance):  # the submissions' keys live on it
            subset = AssetGraphSubset.from_asset_keys(keys, graph)
        return dg.RunRequest.for_asset_graph_subset(subset, tags=tags)
    return dg.RunRequest(asset_selection=sorted(keys, key=str), tags=tags)  # no run key: a reverted bundle reruns


def check_corpus_version(context: dg.SensorEvaluationContext, settings: SettingsResource):
    """One tick: the bundle's fingerprint against the cursor (or the recorded baseline)."""
    s = settings.get()
    spec = s.corpus.bundle
    fingerprint = watch.bundle_fingerprint(spec, Path(s.config_dir), resolve_commit=watch.hub_commit)
    seen = context.cursor or recorded_fingerprint(context.instance, spec)
    context.update_cursor(fingerprint)
    if seen is None:
        return dg.SkipReason(f"first look at corpus bundle {spec}: {fingerprint} recorded as the baseline")
    if seen == fingerprint:
        return dg.SkipReason(f"corpus bundle {spec} unchanged ({fingerprint})")
    context.log.info(f"corpus bundle {spec} changed: {seen} -> {fingerprint}")
    return dg.SensorResult(  # the bundle's new data version is recorded, so the runs' provenance holds it
        run_requests=[corpus_run_request(context.repository_def.asset_graph, fingerprint, context.instance)],
        asset_events=[observation("corpus_bundle", fingerprint)],
    )


def corpus_version_sensor(settings: PipelineSettings) -> dg.SensorDefinition:
    """The sensor, polling at ``corpus.sensor_interval_s``."""
    return dg.sensor(
        name="corpus_version_sensor",
        asset_selection=CORPUS_AND_DOWNSTREAM,  # not target=: that builds one job, which cannot mix partitions
        minimum_interval_seconds=settings.corpus.sensor_interval_s,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Hashes the configured corpus bundle (or resolves its hub revision); on a change, requests the "
        "corpus assets and everything downstream. Judging then labels only the new pairs.",
    )(check_corpus_version)
