"""Calls to an OpenAI-compatible endpoint with the LLM client's retry rules (embeddings and rerank).

Embeddings go through the ``openai`` client; rerank requests, which carry a query's whole candidate list,
go through :class:`JsonPoster`, which posts bodies the caller has already serialised (no per-request
encoding or model objects on the hot path).

Transport errors (HTTP 408, 409, 429, 5xx, timeouts, lost connections) and
answers the caller cannot parse are retried with exponential backoff and jitter,
honouring ``Retry-After``; other HTTP errors fail at once. The key comes from the
environment variable the configuration names and never appears in messages.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mama_pipeline.llm.client import NO_KEY, backoff_delay, is_retryable, retry_after
from mama_pipeline.retrieval._retriever_params import EndpointParams

T = TypeVar("T")


class EndpointRequestError(RuntimeError):
    """A request that failed for good (its last error, and how many attempts were made)."""


class MalformedAnswer(ValueError):
    """An answer that arrived but cannot be used (retried like a transport error)."""


def open_client(params: EndpointParams, http_client_factory: Callable[[], Any] | None = None):
    import openai

    return openai.AsyncOpenAI(
        base_url=params.base_url,
        api_key=os.environ.get(params.api_key_env) or NO_KEY,
        max_retries=0,
        timeout=params.timeout_s,
        http_client=http_client_factory() if http_client_factory else None,
    )


class StatusError(Exception):
    """An HTTP error status from :class:`JsonPoster` (its ``response`` carries the headers, e.g. Retry-After)."""

    def __init__(self, response) -> None:
        super().__init__(response.text[:300])
        self.status_code = response.status_code
        self.response = response


class JsonPoster:
    """``POST {base_url}/{path}`` with a ready JSON body; the key is sent as a bearer token read from the
    environment. Plain-http endpoints get the LLM client's lean transport, posted to directly with a request
    head made once per path; anything else (https, a proxy, a redirect) goes through an httpx client."""

    def __init__(self, params: EndpointParams, transport: Any = None) -> None:
        import httpx2

        from mama_pipeline.llm.http_transport import LeanTransport, lean_applies

        key = os.environ.get(params.api_key_env) or NO_KEY
        self._lean = LeanTransport() if transport is None and lean_applies(params.base_url) else None
        if self._lean is not None:
            self._client = httpx2.AsyncClient(
                transport=self._lean, timeout=params.timeout_s, follow_redirects=True, trust_env=False
            )
        else:
            self._client = httpx2.AsyncClient(
                timeout=params.timeout_s,
                transport=transport,
                limits=httpx2.Limits(max_connections=params.concurrency, max_keepalive_connections=params.concurrency),
            )
        self._headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        self._base = params.base_url.rstrip("/") + "/"
        self._timeout = params.timeout_s
        self._heads: dict[str, tuple[str, int, bytes]] = {}

    async def post(self, path: str, body: bytes) -> bytes:
        """The answer's body; :class:`StatusError` on an HTTP error status (transport errors propagate)."""
        import httpx2

        url = self._base + path.lstrip("/")
        if self._lean is not None:
            host, port, head = self._heads.get(url) or self._head(url)
            status, headers, content = await self._lean.exchange(
                host, port, head + b"%d\r\n\r\n" % len(body), body, self._timeout, self._timeout
            )
            if status < 300 and not any(name.lower() == b"content-encoding" for name, _ in headers):
                return content
            if not 300 <= status < 400:
                resp = httpx2.Response(status, headers=headers, content=content)  # decodes a compressed body
                if status >= 400:
                    raise StatusError(resp)
                return resp.content
        resp = await self._client.post(url, content=body, headers=self._headers)  # (follows a redirect)
        if resp.status_code >= 400:
            raise StatusError(resp)
        return resp.content

    def _head(self, url: str) -> tuple[str, int, bytes]:
        import httpx2

        parsed = httpx2.URL(url)
        lines = [b"POST ", parsed.raw_path, b" HTTP/1.1\r\nhost: ", parsed.netloc, b"\r\n"]
        for name, value in self._headers.items():
            lines += [name.encode(), b": ", value.encode(), b"\r\n"]
        self._heads[url] = parsed.host, parsed.port or 80, b"".join([*lines, b"content-length: "])
        return self._heads[url]

    async def close(self) -> None:
        await self._client.aclose()


async def with_retries(
    params: EndpointParams,
    sem: asyncio.Semaphore,
    rng: random.Random,
    send: Callable[[], Awaitable[Any]],
    on_attempt: Callable[[], None] = lambda: None,
    parse: Callable[[Any], T] = lambda answer: answer,
) -> T:
    """``parse(await send())`` until it succeeds; :class:`EndpointRequestError` when it never does.

    ``send()`` runs under the semaphore; ``parse`` (which raises :class:`MalformedAnswer`) after the request
    slot is free again, so the next request goes out while this answer is read.
    """
    import httpx2
    import openai

    failures = 0
    while True:
        wait_at_least = None
        try:
            async with sem:
                on_attempt()
                answer = await send()
            await asyncio.sleep(0)  # the task waiting for the freed slot sends its request before this answer is read
            return parse(answer)
        except (openai.APIStatusError, StatusError) as exc:
            code = exc.status_code
            error = f"HTTP {code} from {params.base_url}: {str(exc)[:300]}"
            if not is_retryable(code):
                raise EndpointRequestError(error) from None
            wait_at_least = retry_after(exc) if code == 429 else None
        except (
            openai.APITimeoutError,
            openai.APIConnectionError,
            httpx2.TimeoutException,
            httpx2.TransportError,
        ) as exc:
            error = f"{type(exc).__name__} from {params.base_url}: {exc}"
        except MalformedAnswer as exc:
            error = f"malformed answer from {params.base_url}: {exc}"
        failures += 1
        if failures > params.max_retries:
            raise EndpointRequestError(f"{error} (gave up after {failures} attempts)")
        delay = backoff_delay(failures, params.backoff_base_s, params.backoff_max_s, rng)
        await asyncio.sleep(max(delay, wait_at_least or 0.0))
