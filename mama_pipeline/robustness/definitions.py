"""The robustness group's Dagster definitions."""

import dagster as dg

from mama_pipeline.robustness.assets import (
    query_variants,
    robustness_input_files,
    robustness_scoreboard,
    variant_labels,
    variant_rankings,
)
from mama_pipeline.robustness.checks import CHECKS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks (none depends on the settings)."""
    return dg.Definitions(
        assets=[robustness_input_files, query_variants, variant_rankings, variant_labels, robustness_scoreboard],
        asset_checks=CHECKS,
    )
