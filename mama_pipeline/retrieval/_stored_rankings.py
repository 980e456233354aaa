"""The pools' reads of the stored ``rankings`` table: the top ranks of some queries, not every stored row.

The pools take ranks 1..depth of the queries they pool and none of the scores; what they check of the
rest (every stored rank names a current chunk and query) is asked of the store, which answers with the
offending rows alone. Another table of rankings partitioned per retriever (the robustness track's
``variant_rankings``) is read and checked the same way.
"""

from __future__ import annotations

import polars as pl

from mama_pipeline.retrieval._pooling import check_current
from mama_pipeline.store import PARTITION_COLUMN, Store

RANKINGS_TABLE = "rankings"
RANKED_SCHEMA = {"query_id": pl.String, "retriever": pl.String, "rank": pl.Int32, "chunk_id": pl.String}


class StoredRankings:
    """Some retrievers' partitions of the stored rankings (None: every partition), of ``table`` (a table of the
    rankings' columns, partitioned per retriever)."""

    def __init__(self, store: Store, retrievers: list[str] | None, table: str = RANKINGS_TABLE):
        self.store = store
        self.retrievers = retrievers
        self.table = table

    def _where(self) -> tuple[str, list]:
        """The partitions' condition and its parameters."""
        if self.retrievers is None:
            return "TRUE", []
        return f'"{PARTITION_COLUMN}" IN (SELECT unnest(?))', [list(self.retrievers)]

    def query_ids(self) -> list[str]:
        """The query ids with stored rows, sorted."""
        where, params = self._where()
        sql = f'SELECT DISTINCT query_id FROM "{self.table}" WHERE {where} ORDER BY query_id'
        return self.store.query(sql, params).get_column("query_id").to_list()

    def present(self, query_ids: list[str] | None = None) -> list[str]:
        """The retrievers with stored rows (of ``query_ids``, when given)."""
        where, params = self._where()
        sql = f'SELECT DISTINCT retriever FROM "{self.table}" WHERE {where}'
        if query_ids is not None:
            sql += " AND query_id IN (SELECT unnest(?))"
            params.append(list(query_ids))
        return self.store.query(sql, params).get_column("retriever").to_list()

    def top(self, depth: int, query_ids: list[str]) -> pl.DataFrame:
        """Ranks 1..``depth`` of ``query_ids`` (query_id, retriever, rank, chunk_id), in no set order."""
        if not query_ids:
            return pl.DataFrame(schema=RANKED_SCHEMA)
        where, params = self._where()
        sql = (
            f'SELECT {", ".join(RANKED_SCHEMA)} FROM "{self.table}" WHERE {where} '
            "AND rank <= ? AND query_id IN (SELECT unnest(?))"
        )
        return self.store.query(sql, [*params, depth, query_ids]).cast(RANKED_SCHEMA)

    def check_current(self, chunks: pl.DataFrame, queries: pl.DataFrame) -> None:
        """:func:`~mama_pipeline.retrieval._pooling.check_current` over every stored rank: the store finds the rows
        naming a chunk or query missing from ``chunks`` / ``queries`` (in the table's order), and only those come
        back (the same errors as over every row)."""
        where, params = self._where()
        sql = (
            f'SELECT r.query_id, r.retriever, r.chunk_id FROM "{self.table}" r WHERE {where} '
            "AND (NOT EXISTS (SELECT 1 FROM _current_chunks c WHERE c.chunk_id = r.chunk_id) "
            "OR NOT EXISTS (SELECT 1 FROM _current_queries q WHERE q.query_id = r.query_id)) ORDER BY r.rowid"
        )
        with self.store.connect() as con:
            con.register("_current_chunks", chunks.select(pl.col("chunk_id").cast(pl.String)))
            con.register("_current_queries", queries.select(pl.col("query_id").cast(pl.String)))
            stale = con.execute(sql, params).pl()
        check_current(stale.cast({c: pl.String for c in stale.columns}), chunks, queries, self.table)
