"""Prompt-prefix cache reuse of the judge's requests: grouped by query versus shuffled.

Judge requests of the sample corpus go to the embedded llama.cpp server in two
orders: grouped (the order judging uses: by query, then chunk) and shuffled
(seeded). Each order gets a fresh server and a fresh answer cache, so only the
server's prompt cache differs. Reported per order: prompt tokens, the cached
prompt tokens the server reports (``usage.prompt_tokens_details.cached_tokens``,
cross-checked with ``/metrics`` ``llamacpp:prompt_tokens_cached_total``) and
their share. Only prompt processing matters here, so answers are cut to one
token (they fail to parse, by design; the usage figures are still reported).

Run from the repository root:
    .venv/bin/python -m benchmarks.judging_prefix_cache [--queries 4] [--per-query 3] [--parallel 1]
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
import urllib.request
from pathlib import Path

import polars as pl

from mama_pipeline.corpus._bundle import load_bundle
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, output_model, render_pair
from mama_pipeline.llm.client import LLMClient, LLMRequest
from mama_pipeline.llm.embedded_server import embedded_server
from mama_pipeline.llm.settings import EmbeddedServerSettings, StageSettings
from mama_pipeline.store import Store

BUNDLE = Path(__file__).resolve().parents[1] / "mama_pipeline" / "sample_data" / "corpus" / "chunks_for_rag.txt"


def sample_pairs(n_queries: int, per_query: int) -> list[dict]:
    """Queries about sections of the sample corpus, each with chunks of its source."""
    chunks = load_bundle(BUNDLE).chunks.filter(pl.col("breadcrumb").list.len() >= 2).sort("source", "ordinal")
    pairs = []
    for qn, (_source, group) in enumerate(sorted(chunks.group_by("source"), key=lambda kv: kv[0][0])[:n_queries]):
        section = group.get_column("breadcrumb")[0][-1]
        query = f"What does the guideline advise about {section.lower()}?"
        for row in group.head(per_query).iter_rows(named=True):
            pairs.append({"query_id": f"q{qn}", "query": query, **row})
    return pairs


def metric(url: str, name: str) -> float:
    text = urllib.request.urlopen(url.removesuffix("/v1") + "/metrics", timeout=10).read().decode()
    m = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")


def measure(order: str, pairs: list[dict], parallel: int, log: Path) -> dict:
    server_cfg = EmbeddedServerSettings(n_parallel=parallel, n_ctx=4096 * parallel)
    model = output_model("server")
    with tempfile.TemporaryDirectory() as tmp, embedded_server(server_cfg, log) as url:
        stage = StageSettings(
            base_urls=[url],
            model=server_cfg.model_alias,
            max_tokens=1,
            parse_retries=0,
            concurrency=parallel,
            timeout_s=900,
        )
        client = LLMClient(
            "judge",
            stage,
            Store(Path(tmp) / "bench.duckdb"),
            endpoint=url,
            model=server_cfg.model_alias,
            resolve_urls=lambda: [url],
        )
        requests = [
            LLMRequest(f"{p['query_id']}|{p['chunk_id']}", render_pair(p["query"], p["source"], p["page"], p["text"]))
            for p in pairs
        ]
        t0 = time.perf_counter()
        report = client.run(RELEVANCE_JUDGE, model, requests)
        wall = time.perf_counter() - t0
        cached_metric = metric(url, "llamacpp:prompt_tokens_cached_total")
    prompt = sum(r.prompt_tokens for r in report.results)
    cached = sum(r.cached_tokens for r in report.results)
    return {
        "order": order,
        "requests": len(requests),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": cached / prompt if prompt else 0.0,
        "metrics_cached_total": cached_metric,
        "wall_s": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=4)
    ap.add_argument("--per-query", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=1, help="server slots = client concurrency")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    grouped = sorted(sample_pairs(args.queries, args.per_query), key=lambda p: (p["query_id"], p["chunk_id"]))
    shuffled = grouped[:]
    random.Random(args.seed).shuffle(shuffled)
    log = Path(tempfile.gettempdir()) / "judging_prefix_cache_server.log"
    rows = [measure("grouped", grouped, args.parallel, log), measure("shuffled", shuffled, args.parallel, log)]
    print(
        f"{len(grouped)} judge requests ({args.queries} queries x {args.per_query} chunks), "
        f"{args.parallel} server slot(s); the system message is shared in any order, the query only when grouped"
    )
    for r in rows:
        print(
            f"  {r['order']:>8}: prompt tokens {r['prompt_tokens']}, cached {r['cached_tokens']} "
            f"({100 * r['cached_share']:.1f}%), /metrics cached total {r['metrics_cached_total']:.0f}, "
            f"wall {r['wall_s']:.1f} s"
        )
    saved = rows[0]["cached_tokens"] - rows[1]["cached_tokens"]
    print(f"  grouping saves {saved} more prompt tokens from recomputation than shuffling")


if __name__ == "__main__":
    main()
