"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, TEI, hosted APIs).

Texts go in batches with bounded concurrency, with the retry, timeout and key
handling of :mod:`mama_pipeline.retrieval._endpoint_client`. A batch that still
fails stops the run: no text is left unembedded.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mama_pipeline.retrieval._embedding_cache import Encoded, Role
from mama_pipeline.retrieval._endpoint_client import EndpointRequestError, MalformedAnswer, open_client, with_retries
from mama_pipeline.retrieval._retriever_params import EndpointParams


class OpenAIEmbeddingsEncoder:
    sparse = False
    max_seq_length = None  # the server truncates (or refuses) by its own rules

    def __init__(self, params: EndpointParams, http_client_factory: Callable[[], Any] | None = None):
        self.params = params
        self.dimension = params.dimensions or 0  # learnt from the first answer when not configured
        self._http_client_factory = http_client_factory
        self._rng = random.Random()
        self.calls = 0
        self.wall_s = 0.0  # time spent in encode's requests (waiting on the endpoint), summed over calls

    def prompt(self, role: Role) -> str:
        return self.params.query_prompt if role == "query" else self.params.document_prompt

    def model_key(self, role: Role) -> str:
        setup = {"prompt": self.prompt(role), "dimensions": self.params.dimensions, "normalize": self.params.normalize}
        digest = hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()[:16]
        return f"openai|{self.params.base_url.rstrip('/')}|{self.params.model}|{role}|{digest}"

    def encode(self, texts: list[str], role: Role) -> Encoded:
        prompt = self.prompt(role)
        started = time.perf_counter()
        vectors = asyncio.run(self._encode_all([prompt + t for t in texts]))
        self.wall_s += time.perf_counter() - started
        if self.params.normalize and vectors.size:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1, norms)
        self.dimension = vectors.shape[1] if vectors.size else self.dimension
        return Encoded(vectors.astype(np.float32), np.full(len(texts), -1, dtype=np.int32))

    def client_figures(self) -> dict[str, float | int]:
        return {"embeddings/http_calls": self.calls, "embeddings/wall_s": round(self.wall_s, 3)}

    async def _encode_all(self, texts: list[str]) -> np.ndarray:
        p = self.params
        client = open_client(p, self._http_client_factory)
        sem = asyncio.Semaphore(p.concurrency)
        batches = [texts[i : i + p.batch_size] for i in range(0, len(texts), p.batch_size)]
        try:
            parts = await asyncio.gather(*(self._batch(client, sem, b) for b in batches))
        finally:
            await client.close()
        return np.concatenate(parts) if parts else np.zeros((0, self.dimension), dtype=np.float32)

    async def _batch(self, client, sem: asyncio.Semaphore, texts: list[str]) -> np.ndarray:
        p = self.params
        extra = {"dimensions": p.dimensions} if p.dimensions else {}

        async def send() -> np.ndarray:
            resp = await client.embeddings.create(model=p.model, input=texts, encoding_format="float", **extra)
            return _vectors(resp, len(texts))

        def count() -> None:
            self.calls += 1

        try:
            return await with_retries(p, sem, self._rng, send, count)
        except EndpointRequestError as exc:
            raise EmbeddingRequestError(str(exc)) from None


class EmbeddingRequestError(EndpointRequestError):
    """An embeddings batch that failed for good."""


def _vectors(resp, n: int) -> np.ndarray:
    data = sorted(resp.data, key=lambda d: d.index)
    if [d.index for d in data] != list(range(n)):
        indices = [d.index for d in data]
        raise MalformedAnswer(f"answer holds embeddings for indices {indices}, sent {n} texts")
    return np.asarray([d.embedding for d in data], dtype=np.float32)
