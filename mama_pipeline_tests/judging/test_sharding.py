"""Query shards: stable, complete and disjoint."""

import polars as pl
import pytest

from mama_pipeline.judging._sharding import in_shard, shard_keys, shard_of


def test_shards_partition_the_pairs_and_do_not_move():
    df = pl.DataFrame({"query_id": [f"q_{i:05d}" for i in range(400) for _ in range(3)], "chunk_id": ["c"] * 1200})
    parts = [in_shard(df, key, 4) for key in shard_keys(4)]
    assert sum(p.height for p in parts) == 1200
    assert all(p.height > 150 for p in parts)  # spread
    assert pl.concat(parts).sort("query_id").equals(df.sort("query_id"))
    assert shard_of("q_00001", 4) == shard_of("q_00001", 4) == "shard_003"  # pinned: a stable hash, not Python's
    for p in parts:
        assert p["query_id"].n_unique() * 3 == p.height  # a query is never split across shards


def test_unknown_partition_is_refused():
    with pytest.raises(ValueError, match="shard_009"):
        in_shard(pl.DataFrame({"query_id": ["q"]}), "shard_009", 4)
