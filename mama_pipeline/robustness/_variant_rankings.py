"""Rank the variants with the registry's retrievers, exactly as the clean queries were ranked.

Each retriever runs through :func:`mama_pipeline.retrieval._registry.ranked_slices`
(same index, encoders and embedding cache, same depth as its clean ranking).
Fusion and rerank retrievers fuse or rerank the variant rankings of their
runs, so they run after them (a run not chosen is refused in one line);
a kind that ranks no free text (an imported run file holds only the clean
query ids) is skipped (listed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from mama_pipeline.common.progress import track
from mama_pipeline.common.slices import SLICE, row_slices
from mama_pipeline.retrieval import RetrievalEnv, empty_rankings, kind_of, needs, ranked_slices
from mama_pipeline.retrieval.settings import RetrievalSettings


def retriever_order(r: RetrievalSettings, names: list[str]) -> tuple[list[str], list[str]]:
    """(retrievers to run, each after the runs it fuses or reranks; those that rank no free text skipped).

    A fusion or reranker whose runs are not all chosen and rankable is refused in one line."""
    unknown = sorted(set(names) - set(r.retriever_names))
    if unknown:
        raise ValueError(f"robustness.retrievers names {unknown}, which are not in retrieval.retrievers")
    chosen = [n for n in r.retriever_names if n in set(names or r.retriever_names)]
    skipped = [n for n in chosen if not kind_of(r.retriever(n)).ranks_free_text]
    runnable = [n for n in chosen if n not in skipped]
    for name in runnable:
        spec = r.retriever(name)
        missing = [x for x in needs(spec) if x not in runnable]
        if missing:
            fix = (
                f"{' and '.join(sorted({r.retriever(x).kind for x in missing}))} runs cannot rank variants: "
                f"leave {name!r} out of robustness.retrievers"
                if set(missing) <= set(skipped)
                else "add them to robustness.retrievers"
            )
            raise ValueError(f"robustness: {spec.kind} retriever {name!r} needs variant rankings of {missing}; {fix}")
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
    env_of: Callable[[Callable[[list[str], list[str]], pl.DataFrame]], RetrievalEnv],
    add: Callable[[pl.DataFrame, str], None],
    log: Callable[[str], None] = print,
    size: int = SLICE,
) -> dict[str, Any]:
    """Rank the variants ``size`` at a time with every chosen retriever, handing each retriever's rankings of a
    slice (query_id = variant id, in variant id order) to ``add(rankings, retriever)``; returns per-retriever
    metadata. Every retriever's searcher is prepared once; a fusion or reranker reads its runs' rankings of the
    same slice, so only a slice's rankings are held."""
    order, skipped = retriever_order(r, names)
    meta: dict[str, Any] = {"skipped_retrievers": ", ".join(skipped) or "none"}
    if variants.is_empty():
        return meta
    queries = variants.select(pl.col("variant_id").alias("query_id"), "query_text")
    current: dict[str, pl.DataFrame] = {}  # each retriever's rankings of the slice being ranked
    env = env_of(lambda wanted, _ids: _of(current, wanted))
    ranked = {name: ranked_slices(r.retriever(name), chunks, queries, r.depth_of(name), env, size) for name in order}
    rows = dict.fromkeys(order, 0)
    with track("robustness: variants ranked", total=queries.height, unit="variants", alike=True) as bar:
        for part in row_slices(queries, size):
            for name in order:
                current[name] = next(ranked[name].slices)
                rows[name] += current[name].height
                add(current[name], name)
            bar.update(part.height)
    for name in order:
        runs = needs(r.retriever(name))
        if runs and not any(rows[x] for x in runs):
            continue  # nothing to fuse or rerank: no variant ranked by its runs
        ranked[name].metadata()  # a run with no rankings at all refused; a reranker's failures recorded
        meta[f"{name}/rows"] = rows[name]
        meta[f"{name}/top_k"] = r.depth_of(name)
        log(f"robustness: {name} ranked {queries.height} variants")
    return meta


def _of(current: dict[str, pl.DataFrame], wanted: list[str]) -> pl.DataFrame:
    return pl.concat([current[n] for n in wanted]) if wanted else empty_rankings()


def check_clean_rankings(ranked: list[str], names: list[str], parents: list[str]) -> None:
    """Refuse in one line a retriever of ``names`` without a stored clean ranking of any of the ``parents``
    (``ranked``: the retrievers with one): its clean queries would score 0 and its drops read negative."""
    for name in names:
        if parents and name not in ranked:
            raise ValueError(
                f"robustness: retriever {name!r} has no clean rankings stored for any of the "
                f"{len(parents)} parent queries; materialise its rankings partition first"
            )
