"""Query shards: the partitions of the judging asset.

A query's shard depends only on its id and the shard count (stable hash), so
adding queries never moves existing ones between shards.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import polars as pl

from mama_pipeline.partitions import shard_keys


def shard_of(query_id: str, shards: int) -> str:
    bucket = int.from_bytes(hashlib.sha256(query_id.encode()).digest()[:8], "big") % shards
    return f"shard_{bucket:03d}"


def in_shard(df: pl.DataFrame, shard: str, shards: int) -> pl.DataFrame:
    """Rows of ``df`` whose ``query_id`` falls in ``shard``."""
    return df.filter(pl.col("query_id").is_in(shard_query_ids(df.get_column("query_id").unique(), shard, shards)))


def shard_query_ids(query_ids: Iterable[str], shard: str, shards: int) -> list[str]:
    """The ids of ``query_ids`` that fall in ``shard``."""
    if shard not in shard_keys(shards):
        raise ValueError(f"partition {shard!r} is not one of the {shards} configured shards")
    return [q for q in query_ids if shard_of(q, shards) == shard]


def require_loaded_shards(loaded: int, configured: int, config_path: str) -> None:
    """Refuse a run whose settings name another shard count than the partitions the definitions loaded."""
    if loaded != configured:
        raise ValueError(
            f"judging.shards is {configured} in this run's configuration ({config_path}) but the definitions were "
            f"loaded with {loaded} shard partitions (MAMA_CONFIG when the code location loaded): the run would judge "
            f"only some query buckets. Use one configuration for both (set MAMA_CONFIG to {config_path} and reload "
            "the code location)."
        )
