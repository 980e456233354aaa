"""Asset inputs that several areas read under short parameter names."""

import dagster as dg

CHUNKS = dg.AssetIn("corpus_chunks")  # the canonical chunk set of the corpus version
QUERIES = dg.AssetIn("generated_queries")  # the benchmark's kept queries
