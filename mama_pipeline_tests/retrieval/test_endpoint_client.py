"""The rerank client's posts on the lean transport: kept-alive connections, compressed answers, error statuses, redirects."""

import asyncio
import gzip
import json

from mama_pipeline.retrieval._endpoint_client import JsonPoster, StatusError
from mama_pipeline.retrieval._kinds.rerank_kind import RerankEndpointBackend
from mama_pipeline_tests.foundation.test_http_transport import RawServer, ok


def post_all(script, bodies: list[bytes], path: str = "/rerank"):
    """Post ``bodies`` one after another through a JsonPoster; (answers or the error, connections, bodies seen)."""
    seen = []

    def recording(n, body):
        seen.append(body)
        return script(n, body)

    async def main():
        async with RawServer(recording) as server:
            params = RerankEndpointBackend(type="endpoint", base_url=server.url, model="m", timeout_s=1.0)
            poster = JsonPoster(params)
            assert poster._lean is not None  # plain http: the direct path
            try:
                return [await poster.post(path, body) for body in bodies], server.connections, seen
            except StatusError as exc:
                return exc, server.connections, seen
            finally:
                await poster.close()

    return asyncio.run(main())


def test_posts_send_their_bodies_intact_on_one_kept_alive_connection():
    bodies = [json.dumps({"i": i, "pad": "x" * 70_000 * i}).encode() for i in range(3)]  # up to 140 KB
    answers, connections, seen = post_all(lambda n, body: (ok({"n": n}), False), bodies)
    assert [json.loads(a) for a in answers] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert seen == bodies and connections == 1


def test_compressed_answers_are_decoded():
    data = gzip.compress(b'{"results": []}')
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: " + str(len(data)).encode() + b"\r\n\r\n" + data
    )
    answers, _, _ = post_all(lambda n, body: (answer, False), [b"{}"])
    assert answers == [b'{"results": []}']


def test_error_statuses_keep_their_status_and_retry_after():
    answer = b'HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\ncontent-length: 13\r\n\r\n{"error": 1}\n'
    exc, _, _ = post_all(lambda n, body: (answer, False), [b"{}"])
    assert isinstance(exc, StatusError) and exc.status_code == 429
    assert exc.response.headers["retry-after"] == "2" and '{"error": 1}' in str(exc)


def test_a_redirect_is_followed_with_the_body():
    def script(n, body):  # the first two requests (the direct one, then httpx's) are sent elsewhere
        if n <= 2:
            return b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v2/rerank\r\ncontent-length: 0\r\n\r\n", False
        return ok({"n": n}), False

    answers, _, seen = post_all(script, [b'{"q": 1}'])
    assert json.loads(answers[0]) == {"n": 3} and seen == [b'{"q": 1}'] * 3


def test_https_endpoints_keep_httpx():
    poster = JsonPoster(RerankEndpointBackend(type="endpoint", base_url="https://rerank.example.org/v1", model="m"))
    assert poster._lean is None
    asyncio.run(poster.close())
