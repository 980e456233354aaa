"""The systems group's Dagster definitions: one partition per configured system."""
import dagster as dg

from mama_pipeline.settings import load_settings
from mama_pipeline.systems.assets import build_assets
from mama_pipeline.systems.checks import CHECKS

ASSETS, SYSTEMS = build_assets(load_settings().systems.names)

defs = dg.Definitions(assets=ASSETS, asset_checks=CHECKS)
