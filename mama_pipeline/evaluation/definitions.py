"""The evaluation group's Dagster definitions."""
import dagster as dg

from mama_pipeline.evaluation import held_out_assets, segment_assets
from mama_pipeline.evaluation.assets import ASSETS, CHECKS

defs = dg.Definitions(assets=ASSETS + segment_assets.ASSETS + held_out_assets.ASSETS, asset_checks=CHECKS)
