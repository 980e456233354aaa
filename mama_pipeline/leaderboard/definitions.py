"""The leaderboard group's Dagster definitions."""
import dagster as dg

from mama_pipeline.leaderboard.assets import ASSETS

defs = dg.Definitions(assets=ASSETS)
