"""The submissions group's Dagster definitions."""

import dagster as dg

from mama_pipeline.settings import PipelineSettings
from mama_pipeline.submissions.assets import ASSETS


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets (none depends on the settings)."""
    return dg.Definitions(assets=ASSETS)
