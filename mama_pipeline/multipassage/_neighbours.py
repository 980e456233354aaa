"""Nearest chunks of each anchor chunk under an embedding retriever (embedding cache + exact FAISS search)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from mama_pipeline.retrieval import EmbedStats, Encoder, embed_with_cache, faiss_hits
from mama_pipeline.store import Store

NEIGHBOUR_SCHEMA = {"anchor_chunk_id": pl.String, "chunk_id": pl.String, "score": pl.Float64}


def embedding_encoder(spec, resolve: Callable[[str], Path]) -> Encoder:
    """The document encoder of an embedding retriever (a kind with dense document vectors: ``dense``, a local
    model; ``openai_embeddings``, a served one)."""
    from mama_pipeline.retrieval import kind_of

    return kind_of(spec).encoder(spec.params, resolve)


def dense_neighbours(
    store: Store, encoder: Encoder, chunks: pl.DataFrame, anchor_ids: list[str], k: int
) -> tuple[pl.DataFrame, EmbedStats]:
    """The ``k`` nearest other chunks of each anchor (inner product of the document vectors: cosine when
    normalised). Chunk vectors come from the shared embedding cache (the retriever's document vectors); with no
    anchors nothing is embedded."""
    if encoder.sparse:
        raise ValueError("multipassage.dense_retriever must name a dense retriever, not a sparse one")
    anchors = sorted(set(anchor_ids))
    if not anchors:
        return pl.DataFrame(schema=NEIGHBOUR_SCHEMA), EmbedStats()
    chunks = chunks.sort("chunk_id")
    encoded, stats = embed_with_cache(store, encoder, chunks["text"].to_list(), "document")
    position = {c: i for i, c in enumerate(chunks["chunk_id"].to_list())}
    vectors = encoded.vectors
    hits = faiss_hits(vectors, vectors[[position[a] for a in anchors]], k + 1, anchors, chunks["chunk_id"].to_numpy())
    out = (
        hits.rename({"query_id": "anchor_chunk_id"})
        .filter(pl.col("anchor_chunk_id") != pl.col("chunk_id"))
        .sort(["anchor_chunk_id", "score", "chunk_id"], descending=[False, True, False])
        .group_by("anchor_chunk_id", maintain_order=True)
        .head(k)
    )
    return out.cast(NEIGHBOUR_SCHEMA), stats
