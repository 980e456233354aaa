"""The corpus group's Dagster definitions: assets, checks and the corpus-version sensor."""

import dagster as dg

from mama_pipeline.corpus.assets import corpus_bundle, corpus_chunks, sampled_chunks
from mama_pipeline.corpus.checks import CHECKS
from mama_pipeline.corpus.sensors import corpus_version_sensor
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks; the sensor polls at ``corpus.sensor_interval_s``."""
    return dg.Definitions(
        assets=[corpus_bundle, corpus_chunks, sampled_chunks],
        asset_checks=CHECKS,
        sensors=[corpus_version_sensor(settings)],
    )
