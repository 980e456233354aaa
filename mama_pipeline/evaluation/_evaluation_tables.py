"""The store tables the evaluation assets read beside their own, by name, and the judged chunks' texts.

Apart from the assets' module so that the assets that need only these (the segment and held-out scoreboards) are
not versioned by the evaluation page's code (``common/code_version.py``).
"""

from __future__ import annotations

import polars as pl

from mama_pipeline.evaluation._stored_qrels import JUDGMENTS

CHUNKS_TABLE = "corpus_chunks"
PER_QUERY = "per_query_results"


def judged_chunk_texts(store, at: int, query_ids: list[str] | None = None) -> pl.DataFrame:
    """(chunk_id, text) of the chunks a judgment labels ``at`` or more (of ``query_ids`` only, when given), in
    corpus order: the relevant chunks' texts."""
    of_queries = " AND query_id IN (SELECT unnest(?))" if query_ids is not None else ""
    return store.query(
        f'SELECT chunk_id, text FROM "{CHUNKS_TABLE}" '
        f'WHERE chunk_id IN (SELECT chunk_id FROM "{JUDGMENTS}" WHERE score >= ?{of_queries}) ORDER BY rowid',
        [at] if query_ids is None else [at, list(query_ids)],
    )
