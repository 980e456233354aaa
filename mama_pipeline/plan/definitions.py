"""The plan group's Dagster definitions."""

import dagster as dg

from mama_pipeline.plan.assets import llm_plan
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The ``llm_plan`` asset (it does not depend on the settings)."""
    return dg.Definitions(assets=[llm_plan])
