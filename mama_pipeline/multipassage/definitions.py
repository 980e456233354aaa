"""The multipassage group's Dagster definitions."""
import dagster as dg

from mama_pipeline.multipassage.assets import ASSETS
from mama_pipeline.multipassage.checks import CHECKS

defs = dg.Definitions(assets=ASSETS, asset_checks=CHECKS)
