"""Test-only definitions: the corpus and queries groups over the real resources (no retrieval, no JVM)."""

import dagster as dg

from mama_pipeline.corpus import definitions as corpus
from mama_pipeline.queries import definitions as queries
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings

_settings = load_settings()  # MAMA_CONFIG when this module loads
defs = dg.Definitions.merge(
    corpus.build_defs(_settings), queries.build_defs(_settings), dg.Definitions(resources=shared_resources())
)
