"""The DuckDB intermediate store."""

from mama_pipeline.store.duckdb_store import BOUNDED, PARTITION_COLUMN, Store

__all__ = ["BOUNDED", "PARTITION_COLUMN", "Store"]
