"""The reports group's Dagster definitions: the index of report pages."""

import dagster as dg

from mama_pipeline.reports.assets import reports_index
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The reports index (no settings shape it)."""
    return dg.Definitions(assets=[reports_index])
