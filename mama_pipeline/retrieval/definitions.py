"""The retrieval group's Dagster definitions."""
import dagster as dg

from mama_pipeline.retrieval.assets import CHECKS, audit_pool, pooled_pairs, rankings

defs = dg.Definitions(assets=[rankings, pooled_pairs, audit_pool], asset_checks=CHECKS)
