"""The corpus group's Dagster definitions."""
import dagster as dg

from mama_pipeline.corpus.assets import corpus_chunks, sampled_chunks
from mama_pipeline.corpus.checks import CHECKS

defs = dg.Definitions(assets=[corpus_chunks, sampled_chunks], asset_checks=CHECKS)
