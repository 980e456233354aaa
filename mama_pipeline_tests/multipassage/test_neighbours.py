"""Cross-source neighbours under any embedding retriever, a served one (openai_embeddings) included."""

from __future__ import annotations

import hashlib
import random

import pytest

from mama_pipeline.multipassage._neighbours import dense_neighbours, embedding_encoder
from mama_pipeline.multipassage.settings import MultipassageSettings, check_against
from mama_pipeline.retrieval._openai_embeddings import OpenAIEmbeddingsEncoder
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunks_frame


def test_the_neighbour_retriever_may_be_any_embedding_retriever():
    mp = MultipassageSettings(dense_retriever="served")
    check_against(mp, {"served": "openai_embeddings"}, [])  # a served encoder, as at paper scale
    check_against(MultipassageSettings(dense_retriever="local"), {"local": "dense"}, [])
    with pytest.raises(
        ValueError,
        match="'served' is a bm25 retriever; it must name an embedding retriever "
        r"\(kind dense or openai_embeddings\)",
    ):
        check_against(mp, {"served": "bm25"}, [])
    with pytest.raises(ValueError, match="'served' is not in retrieval.retrievers"):
        check_against(mp, {}, [])


def fake_vector(text: str, dim: int = 16) -> list[float]:
    """The fake server's embedding of ``text`` (a seeded Gaussian, unit length)."""
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    vec = [rng.gauss(0, 1) for _ in range(dim)]
    norm = sum(v * v for v in vec) ** 0.5
    return [v / norm for v in vec]


def test_neighbours_from_a_served_encoder_are_the_nearest_by_cosine(store, tmp_path, fake_llm):
    spec = RetrievalSettings.model_validate(
        {
            "retrievers": [
                {
                    "name": "served",
                    "kind": "openai_embeddings",
                    "params": {
                        "base_url": fake_llm.url,
                        "model": "fake-embed",
                        "dimensions": 16,
                        "backoff_base_s": 0.01,
                    },
                }
            ]
        }
    ).retriever("served")
    encoder = embedding_encoder(spec, lambda p: tmp_path / p)
    assert isinstance(encoder, OpenAIEmbeddingsEncoder)
    chunks = chunks_frame()
    ids = chunks["chunk_id"].to_list()
    vectors = {c: fake_vector(t) for c, t in zip(ids, chunks["text"].to_list())}
    anchor = chunks.filter(chunks["text"] == TEXTS[0])["chunk_id"][0]
    cosine = {c: sum(a * b for a, b in zip(vectors[anchor], v)) for c, v in vectors.items() if c != anchor}
    expected = sorted(cosine, key=lambda c: (-cosine[c], c))[:3]
    got, stats = dense_neighbours(store, encoder, chunks, [anchor], 3)
    assert got["chunk_id"].to_list() == expected
    assert got["score"].to_list() == pytest.approx([cosine[c] for c in expected], abs=1e-5)
    assert stats.encoded == len(TEXTS)
    calls = fake_llm.stats()["embeddings_calls"]
    again, stats = dense_neighbours(store, encoder, chunks, [anchor], 3)
    assert again.equals(got) and stats.cached == len(TEXTS) and fake_llm.stats()["embeddings_calls"] == calls


def test_no_anchors_embeds_nothing(store, tmp_path, fake_llm):
    spec = RetrievalSettings.model_validate(
        {
            "retrievers": [
                {
                    "name": "served",
                    "kind": "openai_embeddings",
                    "params": {"base_url": fake_llm.url, "model": "fake-embed", "dimensions": 16},
                }
            ]
        }
    ).retriever("served")
    calls = fake_llm.stats().get("embeddings_calls", 0)
    got, stats = dense_neighbours(store, embedding_encoder(spec, lambda p: tmp_path / p), chunks_frame(), [], 3)
    assert got.is_empty() and got.columns == ["anchor_chunk_id", "chunk_id", "score"]
    assert stats.encoded == stats.cached == 0 and fake_llm.stats().get("embeddings_calls", 0) == calls


def test_an_optional_llm_stage_cannot_write_or_verify_the_questions():
    import pydantic

    with pytest.raises(pydantic.ValidationError, match="'cross_model_judge' is not an LLM stage"):
        MultipassageSettings(verifier_stage="cross_model_judge")
    assert MultipassageSettings(verifier_stage="reference_judge").verifier_stage == "reference_judge"
