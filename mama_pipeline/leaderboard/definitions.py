"""The leaderboard group's Dagster definitions."""

import dagster as dg

from mama_pipeline.leaderboard.assets import ASSETS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets (none depends on the settings)."""
    return dg.Definitions(assets=ASSETS)
