"""The submissions group's Dagster definitions."""
import dagster as dg

from mama_pipeline.submissions.assets import ASSETS

defs = dg.Definitions(assets=ASSETS)
