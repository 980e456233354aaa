"""Rank the variants with the registry's retrievers, exactly as the clean queries were ranked.

Each retriever runs through :func:`mama_pipeline.retrieval.registry.run_retriever`
(same index, encoders and embedding cache, same depth as its clean ranking).
Fusion retrievers fuse the variant rankings of their runs, so they run after
them; imported run files hold only the clean query ids and are skipped (listed).
"""
from __future__ import annotations

from typing import Any, Callable

import polars as pl

from mama_pipeline.retrieval.rankings import empty_rankings
from mama_pipeline.retrieval.registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.store import Store

UNRANKABLE_KINDS = ("imported",)  # a run file cannot rank queries it was not made for


def retriever_order(r: RetrievalSettings, names: list[str]) -> tuple[list[str], list[str]]:
    """(retrievers to run, fusions first needing their runs; imported ones skipped)."""
    unknown = sorted(set(names) - set(r.retriever_names))
    if unknown:
        raise ValueError(f"robustness.retrievers names {unknown}, which are not in retrieval.retrievers")
    chosen = [n for n in r.retriever_names if n in set(names or r.retriever_names)]
    skipped = [n for n in chosen if r.retriever(n).kind in UNRANKABLE_KINDS]
    runnable = [n for n in chosen if n not in skipped]
    plain = [n for n in runnable if r.retriever(n).kind != "rrf"]
    fused = [n for n in runnable if r.retriever(n).kind == "rrf"]
    for name in fused:
        missing = [x for x in r.retriever(name).params.runs if x not in plain + fused[: fused.index(name)]]
        if missing:
            raise ValueError(f"robustness: fusion retriever {name!r} needs variant rankings of {missing}; "
                             "add them to robustness.retrievers")
    return plain + fused, skipped


def rank_variants(
    r: RetrievalSettings, names: list[str], chunks: pl.DataFrame, variants: pl.DataFrame, store: Store,
    work_dir, resolve: Callable, log: Callable[[str], None] = print,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The rankings table (query_id = variant id) of every chosen retriever, and per-retriever metadata."""
    order, skipped = retriever_order(r, names)
    queries = variants.select(pl.col("variant_id").alias("query_id"), "query_text")
    done: dict[str, pl.DataFrame] = {}

    def load(wanted: list[str]) -> pl.DataFrame:
        return pl.concat([done[n] for n in wanted]) if wanted else empty_rankings()

    env = RetrievalEnv(store=store, work_dir=work_dir, resolve=resolve, load_rankings=load, log=log)
    meta: dict[str, Any] = {"skipped_retrievers": ", ".join(skipped) or "none"}
    for name in order:
        if queries.is_empty():
            done[name] = empty_rankings()
            continue
        spec = r.retriever(name)
        out = run_retriever(spec, chunks, queries, r.depth_of(name), env)
        done[name] = out.rankings
        meta[f"{name}/rows"] = out.rankings.height
        meta[f"{name}/top_k"] = r.depth_of(name)
        log(f"robustness: {name} ranked {queries.height} variants")
    rankings = pl.concat([empty_rankings(), *done.values()]).sort("retriever", "query_id", "rank")
    return rankings, meta
