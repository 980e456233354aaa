"""Judging pools: the union of retrievers' top-k per query, optionally with the seed chunk.

A pair lists the retrievers whose top-k held it and its best rank among them;
the seed chunk (the query's provenance) joins as its own pair when asked for.
The audit pool is a wider pool (more retrievers, deeper) on a tier-stratified,
seeded query sample, flagged with whether each pair is already in the main pool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import polars as pl

from mama_pipeline.common.slices import SLICE, id_slices
from mama_pipeline.store.table_schema import table_schema

POOL_SCHEMA = table_schema("pooled_pairs")


def pool_pairs(
    rankings: pl.DataFrame,
    retrievers: list[str],
    depth: int,
    queries: pl.DataFrame,
    include_seed: bool,
    present: Iterable[str] | None = None,
) -> pl.DataFrame:
    """Union of each retriever's top ``depth`` for every query in ``queries``. ``present``: the retrievers the
    stored rankings hold, when ``rankings`` holds only some of their rows (default: those in ``rankings``)."""
    require_retrievers(rankings["retriever"].unique().to_list() if present is None else present, retrievers)
    return _pool(rankings, retrievers, depth, queries, include_seed)


def require_retrievers(present: Iterable[str], retrievers: list[str]) -> None:
    """Fail when a pooled retriever has no stored rankings."""
    have = set(present)
    missing = [r for r in retrievers if r not in have]
    if missing:
        raise ValueError(f"pool: no rankings for retriever(s) {missing}; materialise those rankings partitions first")


def pool_slices(
    ranked_of: Callable[[list[str]], pl.DataFrame],
    retrievers: list[str],
    depth: int,
    queries: pl.DataFrame,
    include_seed: bool,
    per_slice: int = SLICE,
) -> Iterator[pl.DataFrame]:
    """:func:`pool_pairs` ``per_slice`` queries at a time, in query_id order (the slices, concatenated, are the
    whole pool, rows in the same order; at least one slice, empty when there are no queries). ``ranked_of(ids)``
    gives those queries' rankings (at least ranks 1..``depth`` of ``retrievers``); check the retrievers are
    present (:func:`require_retrievers`) first."""
    ids = queries.get_column("query_id").cast(pl.String).unique().sort().to_list()
    for mine in id_slices(ids, per_slice) if ids else [[]]:
        part = queries.filter(pl.col("query_id").cast(pl.String).is_in(mine))
        yield _pool(ranked_of(mine), retrievers, depth, part, include_seed)


def _pool(
    rankings: pl.DataFrame, retrievers: list[str], depth: int, queries: pl.DataFrame, include_seed: bool
) -> pl.DataFrame:
    qids = queries.select(pl.col("query_id").cast(pl.String))
    retrieved = (
        rankings.filter(pl.col("retriever").is_in(retrievers) & (pl.col("rank") <= depth))
        .join(qids, on="query_id", how="semi")
        .group_by("query_id", "chunk_id")
        .agg(retrievers=pl.col("retriever").unique().sort(), best_rank=pl.col("rank").min().cast(pl.Int32))
    )
    if include_seed:
        seeds = queries.filter(pl.col("seed_chunk_id").is_not_null()).select(
            pl.col("query_id").cast(pl.String), chunk_id=pl.col("seed_chunk_id").cast(pl.String), is_seed=pl.lit(True)
        )
        pairs = retrieved.join(seeds, on=["query_id", "chunk_id"], how="full", coalesce=True)
    else:
        pairs = retrieved.with_columns(is_seed=pl.lit(None, pl.Boolean))
    return (
        pairs.with_columns(
            retrievers=pl.col("retrievers").fill_null(pl.lit([], pl.List(pl.String))),
            is_seed=pl.col("is_seed").fill_null(False),
        )
        .with_columns(pool_size=pl.len().over("query_id").cast(pl.Int32))
        .select(list(POOL_SCHEMA))
        .cast(POOL_SCHEMA)
        .sort("query_id", "chunk_id")
    )


def check_current(
    rankings: pl.DataFrame, chunks: pl.DataFrame, queries: pl.DataFrame, stored: str = "rankings"
) -> None:
    """Fail when stored rankings (of the table ``stored``), or seed chunks, name chunks or queries the current tables
    do not hold."""
    for column, table, frame in (("chunk_id", "chunks", chunks), ("query_id", "queries", queries)):
        stale = rankings.join(frame.select(pl.col(column).cast(pl.String)), on=column, how="anti")
        if stale.height:
            names = sorted(stale["retriever"].unique().to_list())
            raise ValueError(
                f"{stored} of {names} name {stale[column].n_unique()} {column}(s) missing from the current {table} "
                f"table (e.g. {stale[column][0]!r}); re-materialise those {stored} partitions"
            )
    seeds = queries.filter(pl.col("seed_chunk_id").is_not_null()).select("query_id", chunk_id="seed_chunk_id")
    lost = seeds.join(chunks.select("chunk_id"), on="chunk_id", how="anti")
    if lost.height:
        raise ValueError(
            f"{lost.height} queries name a seed chunk missing from the chunks table "
            f"(e.g. query {lost['query_id'][0]!r}, chunk {lost['chunk_id'][0]!r})"
        )


def pool_stats(pool: pl.DataFrame, retrievers: list[str], n_queries: int) -> dict[str, Any]:
    """Pool size distribution and each retriever's (unique) contribution, for Dagster metadata."""
    return sliced_pool_stats([pool], retrievers, n_queries)


def sliced_pool_stats(slices: Iterable[pl.DataFrame], retrievers: list[str], n_queries: int) -> dict[str, Any]:
    """:func:`pool_stats` of a pool given as slices, each holding whole queries (one slice in memory at a time)."""
    per_slice, pairs, seed_pairs, seed_retrieved = [], 0, 0, 0
    pairs_from, only_from = dict.fromkeys(retrievers, 0), dict.fromkeys(retrievers, 0)
    for pool in slices:
        per_slice.append(pool.group_by("query_id").agg(n=pl.len())["n"])
        pairs += pool.height
        seed_pairs += int(pool["is_seed"].sum())
        seed_retrieved += pool.filter(pl.col("is_seed") & (pl.col("retrievers").list.len() > 0)).height
        for name in retrievers:
            mine = pool.filter(pl.col("retrievers").list.contains(name))
            pairs_from[name] += mine.height
            only_from[name] += mine.filter(pl.col("retrievers").list.len() == 1).height
    sizes = pl.concat(per_slice) if per_slice else pl.Series("n", [], pl.UInt32)
    stats: dict[str, Any] = {
        "queries": n_queries,
        "queries_in_pool": sizes.len(),
        "pairs": pairs,
        "pool_size_mean": round(float(sizes.mean()), 3) if sizes.len() else 0.0,
        "pool_size_median": float(sizes.median()) if sizes.len() else 0.0,
        "pool_size_min": int(sizes.min()) if sizes.len() else 0,
        "pool_size_max": int(sizes.max()) if sizes.len() else 0,
        "seed_pairs": seed_pairs,
        "seed_pairs_retrieved": seed_retrieved,
    }
    for name in retrievers:
        stats[f"pairs_from/{name}"] = pairs_from[name]
        stats[f"pairs_only_from/{name}"] = only_from[name]
    return stats


def stratified_query_sample(queries: pl.DataFrame, n: int, seed: int) -> pl.DataFrame:
    """``n`` queries, allocated to tiers in proportion to their size (largest remainder), drawn per tier.

    Each tier draws with its own generator seeded by (seed, tier), so a tier's
    draw does not depend on the other tiers. Queries without a tier form one stratum.
    """
    frame = queries.with_columns(_stratum=pl.col("tier").cast(pl.String).fill_null("(no tier)")).sort("query_id")
    sizes = dict(frame.group_by("_stratum").agg(n=pl.len()).sort("_stratum").iter_rows())
    quotas = largest_remainder(sizes, min(n, frame.height))
    picked = []
    for stratum, quota in quotas.items():
        ids = frame.filter(pl.col("_stratum") == stratum)["query_id"].to_numpy()
        rng = np.random.default_rng([seed, int(hashlib.sha256(stratum.encode()).hexdigest()[:8], 16)])
        picked.extend(ids[np.sort(rng.choice(len(ids), size=quota, replace=False))].tolist())
    return frame.filter(pl.col("query_id").is_in(picked)).drop("_stratum")


def largest_remainder(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Split ``n`` over strata in proportion to ``sizes``; leftover seats go to the largest remainders."""
    total = sum(sizes.values())
    if total == 0:
        return {k: 0 for k in sizes}
    exact = {k: n * v / total for k, v in sizes.items()}
    quotas = {k: int(e) for k, e in exact.items()}
    order = sorted(sizes, key=lambda k: (-(exact[k] - quotas[k]), k))
    for k in order[: n - sum(quotas.values())]:
        quotas[k] += 1
    return quotas


def audit_pool(
    rankings: pl.DataFrame,
    retrievers: list[str],
    depth: int,
    sample: pl.DataFrame,
    include_seed: bool,
    main_pool: pl.DataFrame,
    present: Iterable[str] | None = None,
) -> pl.DataFrame:
    """The wider pool on the sampled queries, with ``in_main_pool`` marking pairs already pooled (``main_pool``
    may hold the sampled queries' pairs alone; ``present`` as for :func:`pool_pairs`)."""
    wide = pool_pairs(rankings, retrievers, depth, sample, include_seed, present)
    main = main_pool.select("query_id", "chunk_id").with_columns(in_main_pool=pl.lit(True))
    return wide.join(main, on=["query_id", "chunk_id"], how="left").with_columns(
        in_main_pool=pl.col("in_main_pool").fill_null(False)
    )
