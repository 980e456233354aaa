"""The evaluation group's Dagster definitions."""

import dagster as dg

from mama_pipeline.evaluation import _segment_assets as segment_assets
from mama_pipeline.evaluation import held_out_assets
from mama_pipeline.evaluation.assets import ASSETS
from mama_pipeline.evaluation.checks import CHECKS
from mama_pipeline.settings import PipelineSettings


def build_defs(settings: PipelineSettings) -> dg.Definitions:
    """The group's assets and checks (none depends on the settings)."""
    return dg.Definitions(assets=ASSETS + segment_assets.ASSETS + held_out_assets.ASSETS, asset_checks=CHECKS)
