"""The lean HTTP transport under the openai client: keep-alive reuse, framing, and httpx's errors for every failure."""

from __future__ import annotations

import asyncio
import gzip
import json

import openai
import pytest

from mama_pipeline.llm.http_transport import LeanTransport, lean_http_client


class RawServer:
    """A loopback HTTP/1.1 server whose answers are scripted per request (bytes to send, then close or not)."""

    def __init__(self, script):
        self.script = script  # callable(request number, body) -> (bytes to send, close after?)
        self.connections = 0
        self.requests = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                body = await reader.readexactly(length)
                self.requests += 1
                answer, close = self.script(self.requests, body)
                if answer is None:  # never answer
                    await asyncio.sleep(3600)
                writer.write(answer)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def ok(payload: dict, extra: bytes = b"") -> bytes:
    data = json.dumps(payload).encode()
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(data)).encode()
        + b"\r\n"
        + extra
        + b"\r\n"
        + data
    )


def client_for(url: str, timeout_s: float = 5.0) -> openai.AsyncOpenAI:
    http = lean_http_client(url, timeout_s)
    assert http is not None and isinstance(http._transport, LeanTransport)
    return openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0, timeout=timeout_s, http_client=http)


def run(coro):
    return asyncio.run(coro)


async def post_once(answer: bytes, close: bool = False):
    """One POST through the lean transport to a server that sends ``answer`` (and then closes, if ``close``)."""
    async with RawServer(lambda n, body: (answer, close)) as server:
        client = client_for(server.url)
        try:
            return await client.post("/x", content=b"{}", cast_to=object)
        finally:
            await client.close()


def test_plain_http_gets_the_lean_transport_https_and_proxied_urls_keep_httpx(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert lean_http_client("http://127.0.0.1:8000/v1", 5) is not None
    assert lean_http_client("https://judge.example.org/v1", 5) is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example.org:3128")
    assert lean_http_client("http://judge.example.org/v1", 5) is None
    monkeypatch.setenv("NO_PROXY", "judge.example.org")
    assert lean_http_client("http://judge.example.org/v1", 5) is not None


def test_answers_reuse_kept_alive_connections_and_send_the_body_intact():
    seen = []

    def script(n, body):
        seen.append(json.loads(body))
        return ok({"n": n}), False

    async def main():
        async with RawServer(script) as server:
            client = client_for(server.url)
            out = [
                await client.post("/chat/completions", content=json.dumps({"i": i}).encode(), cast_to=object)
                for i in range(5)
            ]
            out += await asyncio.gather(
                *(client.post("/chat/completions", content=b'{"i": 9}', cast_to=object) for _ in range(3))
            )
            await client.close()
            return out, server.connections

    out, connections = run(main())
    assert [o["n"] for o in out[:5]] == [1, 2, 3, 4, 5] and sorted(o["n"] for o in out[5:]) == [6, 7, 8]
    assert seen[:5] == [{"i": i} for i in range(5)]
    assert connections <= 3  # five sequential requests on one connection, at most two more for the parallel ones


def test_a_connection_the_server_closed_after_answering_is_replaced():
    async def main():
        async with RawServer(lambda n, body: (ok({"n": n}), True)) as server:  # answers, then closes silently
            client = client_for(server.url)
            first = await client.post("/x", content=b"{}", cast_to=object)
            await asyncio.sleep(0.05)
            second = await client.post("/x", content=b"{}", cast_to=object)
            await client.close()
            return first, second, server.connections

    first, second, connections = run(main())
    assert (first["n"], second["n"], connections) == (1, 2, 2)


def test_chunked_and_gzip_answers_are_decoded():
    data = gzip.compress(json.dumps({"answer": "B"}).encode())
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (data[:7], data[7:])) + b"0\r\n\r\n"
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
        b"transfer-encoding: chunked\r\n\r\n" + chunked
    )

    assert run(post_once(answer)) == {"answer": "B"}


def test_http_errors_keep_their_status_for_the_retry_rules():
    answer = b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\ncontent-length: 2\r\n\r\n{}"

    with pytest.raises(openai.RateLimitError) as exc:
        run(post_once(answer))
    assert exc.value.response.headers["retry-after"] == "2"


@pytest.mark.parametrize(
    "answer",
    [
        b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"cut',  # cut off mid-body
        b"not http at all\r\n\r\n",
    ],
)
def test_cut_or_malformed_answers_are_connection_errors_never_values(answer):
    with pytest.raises(openai.APIConnectionError) as exc:
        run(post_once(answer, close=True))
    assert not isinstance(exc.value, openai.APITimeoutError)


def test_refused_connection_and_silent_server_map_to_openai_errors():
    async def refused():
        async with RawServer(lambda n, body: (ok({}), False)) as server:
            url = server.url
        client = client_for(url)
        try:
            await client.post("/x", content=b"{}", cast_to=object)
        finally:
            await client.close()

    async def silent():
        async with RawServer(lambda n, body: (None, False)) as server:
            client = client_for(server.url, timeout_s=0.3)
            try:
                await client.post("/x", content=b"{}", cast_to=object)
            finally:
                await client.close()

    with pytest.raises(openai.APIConnectionError) as exc:
        run(refused())
    assert not isinstance(exc.value, openai.APITimeoutError)
    with pytest.raises(openai.APITimeoutError):
        run(silent())
