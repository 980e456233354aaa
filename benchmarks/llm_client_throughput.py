"""Client throughput against the local fake server (fixed answer time), and cache-hit overhead.

Run from the repository root: .venv/bin/python -m benchmarks.llm_client_throughput [--requests 5000] [--hits 100000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from mama_pipeline.llm.answer_log import fold
from mama_pipeline.llm.client import LLMClient, LLMRequest, LLMResult, cache_key, decoding_params, schema_of
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import running_server


class Verdict(BaseModel):
    reasoning: str
    d2: int = Field(ge=0, le=2)


TPL = PromptTemplate(id="bench", system="You grade relevance.", user="Query: {q}\nChunk: {c}")


def requests(n: int, tag: str) -> list[LLMRequest]:
    return [LLMRequest(f"{tag}{i}", TPL.render(q=f"question {i % 97}", c=f"{tag} chunk text {i}")) for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--hits", type=int, default=100_000)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        store = Store(Path(tmp) / "bench.duckdb")
        cfg = StageSettings(base_urls=[server.url], model="fake", concurrency=args.concurrency)
        client = LLMClient("judge", cfg, store, endpoint=server.url, model="fake", resolve_urls=lambda: [server.url])
        reqs = requests(args.requests, "a")
        t0 = time.perf_counter()
        report = client.run(TPL, Verdict, reqs)
        wall = time.perf_counter() - t0
        ideal = args.concurrency / args.delay
        rate = args.requests / wall
        assert not report.failures and report.calls == args.requests
        stored = store.query("select count(*) n from llm_responses")["n"][0]
        print(
            f"throughput: {args.requests} requests, {args.delay * 1000:.0f} ms answers, concurrency {args.concurrency}"
        )
        print(f"  wall {wall:.2f} s, {rate:.1f} req/s, ideal {ideal:.0f} req/s -> {100 * rate / ideal:.1f}% of ideal")
        print(f"  rows persisted in the cache: {stored}")

        hits = requests(args.hits, "h")
        hit_client = LLMClient("judge", cfg, store, endpoint="hits", model="fake", resolve_urls=lambda: [server.url])
        t0 = time.perf_counter()
        prefill(store, hit_client, hits)
        fill_wall = time.perf_counter() - t0
        calls_before = server.stats()["chat_calls"]
        t0 = time.perf_counter()
        again = hit_client.run(TPL, Verdict, hits)
        hit_wall = time.perf_counter() - t0
        assert server.stats()["chat_calls"] == calls_before and again.cache_hits == args.hits
        assert all(r.ok for r in again.results)
        print(
            f"cache hits: {args.hits} requests served from the cache in {hit_wall:.2f} s "
            f"-> {1e6 * hit_wall / args.hits:.1f} us per request, zero HTTP calls "
            f"(cache pre-filled with their answers in {fill_wall:.1f} s)"
        )


def prefill(store: Store, client: LLMClient, reqs: list[LLMRequest]) -> None:
    """Store an answer for every request under the key the client computes (no HTTP)."""
    schema = schema_of(Verdict)
    decoding = decoding_params(client.s)
    rows = [
        LLMResult(
            r.item_id,
            cache_key(client.endpoint, client.model, TPL, r.messages, decoding, schema),
            "ok",
            value={"reasoning": "cached", "d2": 1},
            raw_text='{"reasoning": "cached", "d2": 1}',
            attempts=1,
        )
        for r in reqs
    ]
    fold(store, [client._row(row, TPL, "bench") for row in rows])


if __name__ == "__main__":
    main()
