"""Stable query ids ``q_00001``...

Rule: a query id belongs to its seed chunk id, for good (registry table
``query_id_registry``; numbering rules in :mod:`mama_pipeline.common.id_registry`). On an
empty registry the ids are simply the kept queries numbered in seed chunk id
order. The id follows the seed chunk, not the question's wording: a rewritten
question for the same chunk keeps its id (the prompt hash on the row says which
prompt wrote it).
"""

from mama_pipeline.common.id_registry import IdRegistry
from mama_pipeline.store.table_schema import table_schema

QUERY_IDS = IdRegistry("q_", "seed_chunk_id", "query id registry", "query id", "seed chunks")
ID_RE = QUERY_IDS.pattern
REGISTRY_SCHEMA = table_schema("query_id_registry")
format_query_id = QUERY_IDS.format
assign_query_ids = QUERY_IDS.assign
