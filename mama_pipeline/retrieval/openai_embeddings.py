"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, TEI, hosted APIs).

Texts go in batches with bounded concurrency. Transport errors (HTTP 408, 409,
429, 5xx, timeouts, lost connections) are retried with exponential backoff and
jitter, honouring ``Retry-After``, as the LLM client does; the key comes from
the environment variable the configuration names and never appears in
messages. A batch that still fails stops the run: no text is left unembedded.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
from typing import Any, Callable

import numpy as np

from mama_pipeline.llm.client import NO_KEY, backoff_delay, is_retryable, retry_after
from mama_pipeline.retrieval.embedding_cache import Encoded, Role
from mama_pipeline.retrieval.settings import OpenAIEmbeddingsParams



class EmbeddingRequestError(RuntimeError):
    """An embeddings batch that failed for good."""


class OpenAIEmbeddingsEncoder:
    sparse = False
    max_seq_length = None  # the server truncates (or refuses) by its own rules

    def __init__(self, params: OpenAIEmbeddingsParams, http_client_factory: Callable[[], Any] | None = None):
        self.params = params
        self.dimension = params.dimensions or 0  # learnt from the first answer when not configured
        self._http_client_factory = http_client_factory
        self._rng = random.Random()
        self.calls = 0

    def prompt(self, role: Role) -> str:
        return self.params.query_prompt if role == "query" else self.params.document_prompt

    def model_key(self, role: Role) -> str:
        setup = {"prompt": self.prompt(role), "dimensions": self.params.dimensions, "normalize": self.params.normalize}
        digest = hashlib.sha256(json.dumps(setup, sort_keys=True).encode()).hexdigest()[:16]
        return f"openai|{self.params.base_url.rstrip('/')}|{self.params.model}|{role}|{digest}"

    def encode(self, texts: list[str], role: Role) -> Encoded:
        prompt = self.prompt(role)
        vectors = asyncio.run(self._encode_all([prompt + t for t in texts]))
        if self.params.normalize and vectors.size:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1, norms)
        self.dimension = vectors.shape[1] if vectors.size else self.dimension
        return Encoded(vectors.astype(np.float32), np.full(len(texts), -1, dtype=np.int32))

    async def _encode_all(self, texts: list[str]) -> np.ndarray:
        import openai

        p = self.params
        client = openai.AsyncOpenAI(
            base_url=p.base_url,
            api_key=os.environ.get(p.api_key_env) or NO_KEY,
            max_retries=0,
            timeout=p.timeout_s,
            http_client=self._http_client_factory() if self._http_client_factory else None,
        )
        sem = asyncio.Semaphore(p.concurrency)
        batches = [texts[i : i + p.batch_size] for i in range(0, len(texts), p.batch_size)]
        try:
            parts = await asyncio.gather(*(self._batch(client, sem, b) for b in batches))
        finally:
            await client.close()
        return np.concatenate(parts) if parts else np.zeros((0, self.dimension), dtype=np.float32)

    async def _batch(self, client, sem: asyncio.Semaphore, texts: list[str]) -> np.ndarray:
        import openai

        p = self.params
        extra = {"dimensions": p.dimensions} if p.dimensions else {}
        failures = 0
        while True:
            wait_at_least = None
            async with sem:
                self.calls += 1
                try:
                    resp = await client.embeddings.create(model=p.model, input=texts, encoding_format="float", **extra)
                except openai.APIStatusError as exc:
                    code = exc.status_code
                    error = f"HTTP {code} from {p.base_url}: {str(exc)[:300]}"
                    if not is_retryable(code):
                        raise EmbeddingRequestError(error) from None
                    wait_at_least = retry_after(exc) if code == 429 else None
                except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                    error = f"{type(exc).__name__} from {p.base_url}: {exc}"
                else:
                    return _vectors(resp, len(texts), p.base_url)
            failures += 1
            if failures > p.max_retries:
                raise EmbeddingRequestError(f"{error} (gave up after {failures} attempts)")
            delay = backoff_delay(failures, p.backoff_base_s, p.backoff_max_s, self._rng)
            await asyncio.sleep(max(delay, wait_at_least or 0.0))


def _vectors(resp, n: int, url: str) -> np.ndarray:
    data = sorted(resp.data, key=lambda d: d.index)
    if [d.index for d in data] != list(range(n)):
        indices = [d.index for d in data]
        raise EmbeddingRequestError(f"{url}: answer holds embeddings for indices {indices}, sent {n} texts")
    return np.asarray([d.embedding for d in data], dtype=np.float32)
