"""A lean HTTP/1.1 transport under the openai client for plain ``http://`` endpoints.

httpx's default stack (httpcore, h11, anyio) spends about a millisecond of CPU per
request, which on a small machine caps a concurrency-64 run well below what the
endpoint can serve. This transport keeps the openai client and its request and
error handling, and replaces only the wire: asyncio protocols parsed by httptools
(uvicorn's parser), with keep-alive connections reused per host. Errors are
httpx's, so the openai client maps them as before: a refused or dropped
connection is an ``APIConnectionError``, a timeout an ``APITimeoutError``.

``https://`` URLs, and URLs an environment proxy applies to, keep httpx's
default transport (:func:`lean_http_client` returns None for them).
"""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

import httptools
import httpx2


def lean_http_client(base_url: str, timeout_s: float) -> httpx2.AsyncClient | None:
    """An httpx client on :class:`LeanTransport` for ``base_url``, or None where httpx's own stack is needed."""
    if not lean_applies(base_url):
        return None
    return httpx2.AsyncClient(transport=LeanTransport(), timeout=timeout_s, follow_redirects=True, trust_env=False)


def lean_applies(base_url: str) -> bool:
    """Whether the lean transport can reach ``base_url``: plain http, no environment proxy in the way."""
    if not base_url.startswith("http://"):
        return False
    proxies = urllib.request.getproxies()
    if proxies.get("http") or proxies.get("all"):
        return bool(urllib.request.proxy_bypass(httpx2.URL(base_url).host))
    return True


class _Connection(asyncio.Protocol):
    """One keep-alive connection; answers one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.waiter: asyncio.Future | None = None
        self.received = False  # any byte of the current answer arrived
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx2.RemoteProtocolError(f"malformed HTTP answer: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(httpx2.RemoteProtocolError("Server disconnected without sending a complete response."))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result((self.parser.get_status_code(), self.parser.should_keep_alive()))

    # own
    def _fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    async def exchange(self, head: bytes, body: bytes, read_timeout: float | None) -> tuple[int, list, bytes, bool]:
        """Send one request and read its whole answer: (status, headers, body, keep-alive)."""
        self.waiter = asyncio.get_running_loop().create_future()
        self.received = False
        self.headers, self.body = [], []
        assert self.transport is not None
        self.transport.write(head + body if len(body) < 65536 else head)
        if len(body) >= 65536:
            self.transport.write(body)
        try:
            async with asyncio.timeout(read_timeout):
                status, keep_alive = await self.waiter
        except TimeoutError:
            self.close()
            raise httpx2.ReadTimeout(f"no complete answer within {read_timeout:g} s") from None
        finally:
            self.waiter = None
        return status, self.headers, b"".join(self.body), keep_alive

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 over asyncio with httptools; idle connections are kept per (host, port) and reused."""

    def __init__(self, max_idle: int = 256) -> None:
        self.max_idle = max_idle
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme != "http":
            raise httpx2.UnsupportedProtocol(f"the lean transport speaks plain http, not {request.url.scheme!r}")
        timeout: dict[str, Any] = request.extensions.get("timeout", {})
        body = await request.aread()
        lines = [request.method.encode(), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in request.headers.raw:
            lines += [name, b": ", value, b"\r\n"]
        lines.append(b"\r\n")
        status, headers, content = await self.exchange(
            request.url.host, request.url.port or 80, b"".join(lines), body, timeout.get("connect"), timeout.get("read")
        )
        return httpx2.Response(
            status, headers=headers, content=content, request=request, extensions={"http_version": b"HTTP/1.1"}
        )

    async def exchange(
        self, host: str, port: int, head: bytes, body: bytes, connect_timeout: float | None, read_timeout: float | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One request whose head (request line and headers) is ready: (status, headers, body as sent).

        For callers that post many ready bodies to one URL (the rerank client) without building an httpx
        request and response each time; errors are httpx's, as for :meth:`handle_async_request`."""
        while True:
            conn, reused = await self._connection(host, port, connect_timeout)
            try:
                status, headers, content, keep_alive = await conn.exchange(head, body, read_timeout)
            except httpx2.RemoteProtocolError:
                conn.close()
                if reused and not conn.received:  # a kept-alive connection the server had just closed: a new one
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            break
        if keep_alive and not conn.closed and not self._closed:
            idle = self._idle.setdefault((host, port), [])
            if len(idle) < self.max_idle:
                idle.append(conn)
            else:
                conn.close()
        else:
            conn.close()
        return status, headers, content

    async def _connection(self, host: str, port: int, connect_timeout: float | None) -> tuple[_Connection, bool]:
        idle = self._idle.get((host, port))
        while idle:
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn, True
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(connect_timeout):
                _, conn = await loop.create_connection(_Connection, host, port)
        except TimeoutError:
            raise httpx2.ConnectTimeout(f"no connection to {host}:{port} within {connect_timeout:g} s") from None
        except OSError as exc:
            raise httpx2.ConnectError(f"cannot connect to {host}:{port}: {exc}") from None
        return conn, False

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
