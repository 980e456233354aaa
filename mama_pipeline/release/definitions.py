"""The release group's Dagster definitions: release assets, their check, the corpus sensor, the sources schedule."""
import dagster as dg

from mama_pipeline.release.assets import CHECKS, mamaretrieval_release, release_publication
from mama_pipeline.mamabench.schedules import mamabench_sources_schedule
from mama_pipeline.corpus.sensors import corpus_version_sensor

defs = dg.Definitions(
    assets=[mamaretrieval_release, release_publication],
    asset_checks=CHECKS,
    sensors=[corpus_version_sensor],
    schedules=[mamabench_sources_schedule],
)
