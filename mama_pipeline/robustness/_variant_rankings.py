"""Rank the variants with one registry retriever (a partition of ``variant_rankings``), exactly as the clean queries
were ranked.

The retriever runs through :func:`mama_pipeline.retrieval._registry.ranked_slices` (same index, encoders and
embedding cache, same depth as its clean ranking), a slice of variants at a time. A fusion or reranker fuses or
reranks the stored variant rankings of its runs (their partitions, materialised first: a run of the pipeline makes
the partitions in the order of ``retrieval.retrievers``, as those of ``rankings``; a run's partition never made is
refused in one line); one whose runs are not chosen or cannot rank variants is refused in one line. A retriever
left out of ``robustness.retrievers``, or of a kind that ranks no free text (an imported run file holds only the
clean query ids), ranks nothing: its partition is empty, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from mama_pipeline.common.progress import track
from mama_pipeline.common.slices import SLICE, row_slices
from mama_pipeline.retrieval import RetrievalEnv, StoredRankings, kind_of, needs, ranked_slices
from mama_pipeline.retrieval.settings import RetrievalSettings


def retriever_order(r: RetrievalSettings, names: list[str]) -> tuple[list[str], list[str]]:
    """(the chosen retrievers that rank the variants, each after the runs it fuses or reranks: the scored ones, in
    their order; the chosen ones that rank no free text).

    A fusion or reranker whose runs are not all chosen and rankable is refused in one line, as are retrievers that
    read each other's rankings in a cycle."""
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


def unranked_reason(r: RetrievalSettings, names: list[str], name: str) -> str | None:
    """Why retriever ``name`` ranks no variant (its partition is left empty), or None when it ranks them. The chosen
    retrievers (``names``; empty: every one) are checked first, with :func:`retriever_order`'s refusals."""
    order, skipped = retriever_order(r, names)
    if name in order:
        return None
    if name in skipped:
        return f"its kind ({r.retriever(name).kind}) ranks no free text: its run holds the clean queries only"
    return "not in robustness.retrievers"


def runs_unranked(
    r: RetrievalSettings,
    name: str,
    stored: StoredRankings,
    materialised: set[str],
    chunks: pl.DataFrame,
    variants: pl.DataFrame,
) -> str | None:
    """For a fusion or reranker ``name`` whose runs' variant rankings are ``stored``: "its runs ranked no variant"
    when none of them did (nothing to fuse or rerank), else None. Refused in one line: a run whose partition is not
    among the ``materialised`` ones, and stored ranks naming a chunk or variant missing from ``chunks`` or
    ``variants`` (:meth:`StoredRankings.check_current`, as ``rankings`` checks a fusion's runs)."""
    spec = r.retriever(name)
    missing = [x for x in needs(spec) if x not in materialised]
    if missing:
        raise ValueError(
            f"robustness: {spec.kind} retriever {name!r} reads the variant rankings of {missing}, never materialised; "
            "materialise those variant_rankings partitions first"
        )
    queries = variant_queries(variants).with_columns(seed_chunk_id=pl.lit(None, pl.String))  # a variant has no seed
    stored.check_current(chunks, queries)
    return None if stored.present() else "its runs ranked no variant"


def variant_queries(variants: pl.DataFrame) -> pl.DataFrame:
    """The variants as queries to rank: query_id = variant id, the variant's text."""
    return variants.select(pl.col("variant_id").alias("query_id"), "query_text")


def rank_variants(
    r: RetrievalSettings,
    name: str,
    chunks: pl.DataFrame,
    variants: pl.DataFrame,
    env: RetrievalEnv,
    add: Callable[[pl.DataFrame], None],
    log: Callable[[str], None] = print,
    size: int = SLICE,
) -> dict[str, Any]:
    """Rank the variants ``size`` at a time with retriever ``name``, handing each slice's rankings (query_id =
    variant id, in variant id order) to ``add``; returns the ranking's metadata. The searcher is prepared once; a
    fusion or reranker reads its runs' rankings of the slice through ``env``, so only a slice's rankings are
    held."""
    queries = variant_queries(variants)
    ranked = ranked_slices(r.retriever(name), chunks, queries, r.depth_of(name), env, size)
    with track(f"robustness: variants ranked by {name}", total=queries.height, unit="variants", alike=True) as bar:
        for part, mine in zip(ranked.slices, row_slices(queries, size), strict=True):
            add(part)
            bar.update(mine.height)
    meta = ranked.metadata()  # a run with no rankings at all refused; a reranker's failures recorded
    log(f"robustness: {name} ranked {queries.height} variants")
    return meta


def check_clean_rankings(ranked: list[str], names: list[str], parents: list[str]) -> None:
    """Refuse in one line a retriever of ``names`` without a stored clean ranking of any of the ``parents``
    (``ranked``: the retrievers with one): its clean queries would score 0 and its drops read negative."""
    for name in names:
        if parents and name not in ranked:
            raise ValueError(
                f"robustness: retriever {name!r} has no clean rankings stored for any of the "
                f"{len(parents)} parent queries; materialise its rankings partition first"
            )
