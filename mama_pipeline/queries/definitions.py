"""The queries group's Dagster definitions."""

import dagster as dg

from mama_pipeline.queries.assets import generated_queries
from mama_pipeline.queries.checks import CHECKS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's asset and checks (none depends on the settings)."""
    return dg.Definitions(assets=[generated_queries], asset_checks=CHECKS)
