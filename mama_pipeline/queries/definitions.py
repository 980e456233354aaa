"""The queries group's Dagster definitions."""
import dagster as dg

from mama_pipeline.queries.assets import generated_queries
from mama_pipeline.queries.checks import CHECKS

defs = dg.Definitions(assets=[generated_queries], asset_checks=CHECKS)
