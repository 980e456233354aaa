"""The plan group's Dagster definitions."""
import dagster as dg

from mama_pipeline.plan.assets import llm_plan

defs = dg.Definitions(assets=[llm_plan])
