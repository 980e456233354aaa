"""The release stage's Dagster definitions: both releases, their publication and the release check."""

import dagster as dg

from mama_pipeline.release.assets import mamabench_release, mamaretrieval_release, release_publication
from mama_pipeline.release.checks import CHECKS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The release assets and check (none depends on the settings)."""
    return dg.Definitions(assets=[mamaretrieval_release, mamabench_release, release_publication], asset_checks=CHECKS)
