"""The DuckDB intermediate store."""

from mama_pipeline.store.duckdb_store import Store

__all__ = ["Store"]
