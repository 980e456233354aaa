"""What a submission is checked and scored against, read from the store: the release's query ids per track,
the corpus's chunk ids and version, the labels that exist, and the mamabench items the systems answer."""

from __future__ import annotations

import polars as pl

from mama_pipeline.settings import PipelineSettings
from mama_pipeline.store import Store
from mama_pipeline.submissions._retrieval_scores import TrackInputs

EMPTY_LABELS = {"query_id": pl.String, "chunk_id": pl.String, "score": pl.Int64}


def _table(store: Store, name: str) -> pl.DataFrame | None:
    return store.read_table(name) if store.table_exists(name) else None


def corpus(store: Store) -> tuple[set[str], str]:
    """The corpus's chunk ids and its version(s), comma-separated."""
    chunks = _table(store, "corpus_chunks")
    if chunks is None:
        raise ValueError("corpus_chunks is not in the store: materialise the corpus before submitting")
    return set(chunks["chunk_id"].to_list()), ",".join(sorted(chunks["corpus_version"].drop_nulls().unique().to_list()))


def retrieval_tracks(store: Store, s: PipelineSettings) -> list[TrackInputs]:
    """Every track whose queries are in the store, with the labels that exist for it."""
    from mama_pipeline.robustness import judge_depth

    queries = _table(store, "generated_queries")
    if queries is None:
        raise ValueError("generated_queries is not in the store: materialise the queries before submitting")
    judgments = _table(store, "judgments")
    main_labels = (
        judgments.select("query_id", "chunk_id", pl.col("score").cast(pl.Int64))
        if judgments is not None
        else pl.DataFrame(schema=EMPTY_LABELS)
    )
    ids = queries["query_id"].to_list()
    tracks = [TrackInputs("main", ids, {q: q for q in ids}, main_labels, s.retrieval.pool_depth)]
    variants = _table(store, "query_variants")
    if variants is not None and variants.height:
        holes = _table(store, "variant_labels")
        hole_labels = (
            holes.filter(pl.col("origin") == "hole")
            .select(pl.col("parent_id").alias("query_id"), "chunk_id", pl.col("score").cast(pl.Int64))
            .unique()
            if holes is not None
            else pl.DataFrame(schema=EMPTY_LABELS)
        )
        labels = pl.concat([main_labels, hole_labels]).unique(["query_id", "chunk_id"], keep="first")
        need = dict(variants.select("variant_id", "parent_id").iter_rows())
        tracks.append(TrackInputs("robustness", sorted(need), need, labels, judge_depth(s)))
    questions = _table(store, "multipassage_questions")
    if questions is not None and questions.height:
        rel, facts = _table(store, "multipassage_labels"), _table(store, "multipassage_fact_labels")
        rel = (
            rel.filter(pl.col("status") == "labelled").select("query_id", "chunk_id", pl.col("score").cast(pl.Int64))
            if rel is not None
            else pl.DataFrame(schema=EMPTY_LABELS)
        )
        facts = (
            facts.filter(pl.col("status") == "labelled").select("query_id", "chunk_id", "facts")
            if facts is not None
            else pl.DataFrame(schema={"query_id": pl.String, "chunk_id": pl.String, "facts": pl.List(pl.Int64)})
        )
        qids = questions["query_id"].to_list()
        tracks.append(
            TrackInputs(
                "multipassage",
                qids,
                {q: q for q in qids},
                rel,
                s.multipassage.pool_depth,
                facts=facts,
                questions=questions,
            )
        )
    seen: dict[str, str] = {}
    for track in tracks:
        for q in track.query_ids:
            if q in seen:
                raise ValueError(f"query id {q!r} is in both the {seen[q]} and the {track.name} track")
            seen[q] = track.name
    return tracks


def system_items(store: Store, s: PipelineSettings) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(every mamabench item, the sample the configured systems answer, the rubric criteria)."""
    from mama_pipeline.systems import benchmark_items, sample_items

    items = _table(store, "mamabench_items")
    criteria = _table(store, "mamabench_criteria")
    if items is None or criteria is None:
        raise ValueError("mamabench_items and mamabench_criteria must be in the store: materialise mamabench first")
    every = benchmark_items(items)
    cfg = s.systems
    return every, sample_items(every, cfg.items_per_track, cfg.sample_seed, cfg.max_rubric_criteria), criteria
