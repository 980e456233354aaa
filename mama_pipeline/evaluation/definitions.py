"""The evaluation group's Dagster definitions."""
import dagster as dg

from mama_pipeline.evaluation.assets import ASSETS, CHECKS

defs = dg.Definitions(assets=ASSETS, asset_checks=CHECKS)
