"""Test-only definitions: the corpus and queries groups over the real resources (no retrieval, no JVM)."""
import dagster as dg

from mama_pipeline.corpus import definitions as corpus
from mama_pipeline.queries import definitions as queries
from mama_pipeline.resources import shared_resources

defs = dg.Definitions.merge(corpus.defs, queries.defs, dg.Definitions(resources=shared_resources()))
