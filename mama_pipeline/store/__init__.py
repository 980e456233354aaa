"""The DuckDB intermediate store."""

from mama_pipeline.store.duckdb_store import PARTITION_COLUMN, Store

__all__ = ["PARTITION_COLUMN", "Store"]
