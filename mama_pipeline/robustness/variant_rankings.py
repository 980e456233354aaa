"""Rank the variants with the registry's retrievers, exactly as the clean queries were ranked.

Each retriever runs through :func:`mama_pipeline.retrieval.registry.run_retriever`
(same index, encoders and embedding cache, same depth as its clean ranking).
Fusion and rerank retrievers fuse or rerank the variant rankings of their
runs, so they run after them (a run not chosen is refused in one line);
imported run files hold only the clean query ids and are skipped (listed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from mama_pipeline.retrieval.rankings import empty_rankings
from mama_pipeline.retrieval.registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.store import Store

UNRANKABLE_KINDS = ("imported",)  # a run file cannot rank queries it was not made for


def needs(spec) -> list[str]:
    """The retrievers whose rankings ``spec`` reads: a fusion's runs, a reranker's base run."""
    if spec.kind == "rrf":
        return list(spec.params.runs)
    if spec.kind == "rerank":
        return [spec.params.run]
    return []


def retriever_order(r: RetrievalSettings, names: list[str]) -> tuple[list[str], list[str]]:
    """(retrievers to run, each after the runs it fuses or reranks; imported ones skipped).

    A fusion or reranker whose runs are not all chosen and rankable is refused in one line."""
    unknown = sorted(set(names) - set(r.retriever_names))
    if unknown:
        raise ValueError(f"robustness.retrievers names {unknown}, which are not in retrieval.retrievers")
    chosen = [n for n in r.retriever_names if n in set(names or r.retriever_names)]
    skipped = [n for n in chosen if r.retriever(n).kind in UNRANKABLE_KINDS]
    runnable = [n for n in chosen if n not in skipped]
    for name in runnable:
        spec = r.retriever(name)
        missing = [x for x in needs(spec) if x not in runnable]
        if missing:
            role = "fusion" if spec.kind == "rrf" else "rerank"
            fix = (
                f"imported runs cannot rank variants: leave {name!r} out of robustness.retrievers"
                if set(missing) <= set(skipped)
                else "add them to robustness.retrievers"
            )
            raise ValueError(f"robustness: {role} retriever {name!r} needs variant rankings of {missing}; {fix}")
    order = [n for n in runnable if not needs(r.retriever(n))]
    waiting = [n for n in runnable if n not in order]
    while waiting:
        ready = [n for n in waiting if all(x in order for x in needs(r.retriever(n)))]
        if not ready:
            raise ValueError(f"robustness: retrievers {waiting} read each other's rankings in a cycle")
        order += ready
        waiting = [n for n in waiting if n not in ready]
    return order, skipped


def rank_variants(
    r: RetrievalSettings,
    names: list[str],
    chunks: pl.DataFrame,
    variants: pl.DataFrame,
    store: Store,
    work_dir,
    resolve: Callable,
    log: Callable[[str], None] = print,
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
        spec = r.retriever(name)
        runs = needs(spec)
        if queries.is_empty() or (runs and all(done[x].is_empty() for x in runs)):
            done[name] = empty_rankings()  # nothing to fuse or rerank: no variant ranked by its runs
            continue
        out = run_retriever(spec, chunks, queries, r.depth_of(name), env)
        done[name] = out.rankings
        meta[f"{name}/rows"] = out.rankings.height
        meta[f"{name}/top_k"] = r.depth_of(name)
        log(f"robustness: {name} ranked {queries.height} variants")
    rankings = pl.concat([empty_rankings(), *done.values()]).sort("retriever", "query_id", "rank")
    return rankings, meta


def check_clean_rankings(ranked: list[str], names: list[str], parents: list[str]) -> None:
    """Refuse in one line a retriever of ``names`` without a stored clean ranking of any of the ``parents``
    (``ranked``: the retrievers with one): its clean queries would score 0 and its drops read negative."""
    for name in names:
        if parents and name not in ranked:
            raise ValueError(
                f"robustness: retriever {name!r} has no clean rankings stored for any of the "
                f"{len(parents)} parent queries; materialise its rankings partition first"
            )
