"""The /v1/embeddings retriever: batching, caching, retries with backoff, key handling."""

import hashlib
import json
import time

import httpx
import numpy as np
import pytest

from mama_pipeline.retrieval._kinds.openai_embeddings_kind import OpenAIEmbeddingsParams
from mama_pipeline.retrieval._openai_embeddings import EmbeddingRequestError, OpenAIEmbeddingsEncoder
from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunks_frame, queries_frame


def test_retriever_batches_caches_and_sends_the_key(store, tmp_path, fake_llm, monkeypatch):
    monkeypatch.setenv("TEST_EMBED_KEY", "secret-123")
    fake_llm.reset()
    settings = RetrievalSettings.model_validate(
        {
            "retrievers": [
                {
                    "name": "api",
                    "kind": "openai_embeddings",
                    "params": {
                        "base_url": fake_llm.url,
                        "model": "fake-embed",
                        "api_key_env": "TEST_EMBED_KEY",
                        "batch_size": 3,
                        "dimensions": 16,
                        "backoff_base_s": 0.01,
                    },
                }
            ]
        }
    )
    spec = settings.retriever("api")
    env = RetrievalEnv(store, tmp_path, lambda p: tmp_path / p, lambda names, ids: None)
    out = run_retriever(spec, chunks_frame(), queries_frame(), 4, env)
    stats = fake_llm.stats()
    assert stats["embedded_texts"] == len(TEXTS) + 5
    assert stats["embeddings_calls"] == 3 + 2  # 8 chunks in batches of 3, 5 queries
    assert stats["bearer_digests"] == [hashlib.sha256(b"secret-123").hexdigest()[:12]]
    assert out.rankings.height == 5 * 4 and out.metadata["dimension"] == 16
    assert "secret-123" not in json.dumps(out.metadata, default=str)
    assert out.metadata["embeddings/http_calls"] == 5 and out.metadata["embeddings/wall_s"] > 0

    again = run_retriever(spec, chunks_frame(), queries_frame(), 4, env)
    assert fake_llm.stats()["embeddings_calls"] == 5  # everything from the cache
    assert again.rankings.equals(out.rankings)
    assert again.metadata["embeddings/http_calls"] == 0 and again.metadata["embeddings/wall_s"] == 0


def mock_factory(handler):
    return lambda: httpx.AsyncClient(transport=httpx.MockTransport(handler))


def answer(request: httpx.Request) -> httpx.Response:
    texts = json.loads(request.content)["input"]
    data = [{"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0]} for i, t in enumerate(texts)]
    return httpx.Response(
        200, json={"object": "list", "data": data[::-1], "model": "m", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    )


def params(**kw):
    return OpenAIEmbeddingsParams(
        base_url="http://embed.test/v1", model="m", backoff_base_s=0.001, backoff_max_s=0.01, normalize=False, **kw
    )


def test_transient_errors_are_retried_and_order_follows_index():
    faults = iter([httpx.Response(429, headers={"retry-after": "0"}, json={}), httpx.Response(503, json={})])

    def handler(request):
        return next(faults, None) or answer(request)

    enc = OpenAIEmbeddingsEncoder(params(batch_size=10), mock_factory(handler))
    out = enc.encode(["a", "bbb", "cc"], "document")
    assert enc.calls == 3
    assert out.vectors[:, 0].tolist() == [1.0, 3.0, 2.0]  # answer came reversed; sorted back by index
    assert (out.n_tokens == -1).all()


def test_client_figures_sum_the_calls_and_the_time_waited():
    def slow(request):
        time.sleep(0.05)
        return answer(request)

    enc = OpenAIEmbeddingsEncoder(params(batch_size=2, concurrency=1), mock_factory(slow))
    assert enc.client_figures() == {"embeddings/http_calls": 0, "embeddings/wall_s": 0}
    enc.encode(["a", "bb", "ccc"], "document")  # two batches, one at a time
    enc.encode(["d"], "query")
    figures = enc.client_figures()
    assert figures["embeddings/http_calls"] == 3 and figures["embeddings/wall_s"] >= 3 * 0.05


def test_gives_up_after_max_retries_and_fails_fast_on_client_errors(monkeypatch):
    monkeypatch.setenv("MAMA_EMBEDDINGS_API_KEY", "sk-never-shown")
    enc = OpenAIEmbeddingsEncoder(params(max_retries=2), mock_factory(lambda r: httpx.Response(500, json={})))
    with pytest.raises(EmbeddingRequestError, match="gave up after 3 attempts") as err:
        enc.encode(["a"], "query")
    assert "sk-never-shown" not in str(err.value)
    enc = OpenAIEmbeddingsEncoder(params(max_retries=5), mock_factory(lambda r: httpx.Response(400, json={})))
    with pytest.raises(EmbeddingRequestError, match="HTTP 400"):
        enc.encode(["a"], "query")
    assert enc.calls == 1


def test_prompts_and_normalisation():
    seen = []

    def handler(request):
        seen.extend(json.loads(request.content)["input"])
        return answer(request)

    p = OpenAIEmbeddingsParams(base_url="http://embed.test/v1", model="m", query_prompt="query: ")
    out = OpenAIEmbeddingsEncoder(p, mock_factory(handler)).encode(["abc"], "query")
    assert seen == ["query: abc"]
    np.testing.assert_allclose(np.linalg.norm(out.vectors, axis=1), 1.0, rtol=1e-6)
