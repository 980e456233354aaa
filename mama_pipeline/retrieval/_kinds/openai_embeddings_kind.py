"""The ``openai_embeddings`` kind: document and query vectors from an OpenAI-compatible ``/v1/embeddings`` endpoint."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from mama_pipeline.retrieval._retriever_params import EndpointParams, RetrieverKind, RetrieverSettings


class OpenAIEmbeddingsParams(EndpointParams):
    dimensions: int | None = Field(None, ge=1)
    query_prompt: str = ""
    document_prompt: str = ""
    normalize: bool = True
    batch_size: int = Field(64, ge=1)  # texts per /v1/embeddings call


class OpenAIEmbeddingsRetriever(RetrieverSettings):
    kind: Literal["openai_embeddings"]
    params: OpenAIEmbeddingsParams

    def model_id(self) -> str | None:
        return self.params.model


def load_encoder(params: OpenAIEmbeddingsParams, resolve: Callable[[str], Path]):
    from mama_pipeline.retrieval._openai_embeddings import OpenAIEmbeddingsEncoder

    return OpenAIEmbeddingsEncoder(params)


def searcher(spec, chunks, queries, depth, corpus_version, env):
    from mama_pipeline.retrieval._registry import embedding_searcher

    encoder = load_encoder(spec.params, env.resolve)
    label = f"{spec.params.base_url}|{spec.params.model}"
    return embedding_searcher(encoder, chunks, depth, env, label, encoder.client_figures)


KIND = RetrieverKind(OpenAIEmbeddingsRetriever, searcher, encoder=load_encoder, dense_vectors=True)
