"""The systems group's Dagster definitions: one partition per configured system.

A configuration without ``systems.entries`` has nothing to evaluate, and the group is left out.
"""
import dagster as dg

from mama_pipeline.settings import load_settings
from mama_pipeline.systems.assets import build_assets
from mama_pipeline.systems import held_out_assets
from mama_pipeline.systems.checks import CHECKS

_NAMES = load_settings().systems.names
ASSETS, _ = build_assets(_NAMES)

defs = dg.Definitions(assets=ASSETS + held_out_assets.ASSETS, asset_checks=CHECKS) if _NAMES else dg.Definitions()
