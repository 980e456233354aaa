"""Reranking throughput: the /rerank endpoint backend against its ideal, the CrossEncoder backend against a
bare ``CrossEncoder.predict`` loop.

Candidates are BM25's top 100 (our registry retriever) for the 3,185 queries of the generated release-scale
corpus of ``benchmarks/retrieval_scale.py`` (63,650 chunks, made once, seeded).

- endpoint: every query's 100 candidates through ``rerank_hits`` (fresh score cache: cache lookup, hashing and
  grouping the pairs batch by batch while the first requests are in flight, one request per query, cache writes) against the local fake server answering in ``--delay`` seconds, with
  ``--concurrency`` requests in flight. Ideal: requests x delay / concurrency. The share of ideal is given for the
  whole call and for its scoring phase (requests in flight), with the client's and the server's CPU per request,
  beside a bare poster that sends the same request bodies, made beforehand, and nothing else (the round trip's
  own cost on this machine and server). Then the re-run (all cached).
- cross-encoder: the first ``--ce-queries`` queries' candidates (the full 318,500 pairs take hours on two
  CPU cores) through ``rerank_hits`` with the CrossEncoder backend (untrained all-MiniLM-L6-v2 head: scores
  not meaningful, cost identical), against ``CrossEncoder.predict`` called once per query on the same pairs,
  alternated; wall clock and process CPU time (which a busy machine disturbs less).

Run: ``.venv/bin/python -m benchmarks.rerank_throughput`` (work files in bench_out/rerank). The load
average (``uptime``) is printed beside each figure: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import polars as pl

from benchmarks.retrieval_scale import generate

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} cores)"


def log(msg: str) -> None:
    print(msg, flush=True)


def bm25_candidates(work: Path, depth: int) -> pl.DataFrame:
    from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
    from mama_pipeline.retrieval.settings import RetrievalSettings
    from mama_pipeline.store import Store

    chunks_path, queries_path = generate(work / "data", 63650, 3185)
    chunks, queries = pl.read_parquet(chunks_path), pl.read_parquet(queries_path)
    run_path = work / f"bm25_top{depth}.parquet"
    if not run_path.exists():
        spec = RetrievalSettings.model_validate({"retrievers": [{"name": "bm25", "kind": "bm25"}]}).retriever("bm25")
        env = RetrievalEnv(
            Store(work / "bm25.duckdb"), work / "bm25", Path, lambda names, ids: None, log=lambda m: None
        )
        t0 = time.perf_counter()
        run_retriever(spec, chunks, queries, depth, env).rankings.write_parquet(run_path)
        log(f"BM25 top-{depth} for {queries.height} queries: {time.perf_counter() - t0:.1f} s ({load()})")
    return (
        pl.read_parquet(run_path)
        .select("query_id", "chunk_id")
        .join(queries.select("query_id", "query_text"), on="query_id")
        .join(chunks.select("chunk_id", "text"), on="chunk_id")
        .sort("query_id", "chunk_id")
    )


def endpoint(candidates: pl.DataFrame, delay: float, concurrency: int) -> None:
    from mama_pipeline.retrieval._kinds.rerank_kind import RerankEndpointBackend
    from mama_pipeline.retrieval._rerank import CACHE_TABLE, rerank_hits
    from mama_pipeline.retrieval._rerank_backends import EndpointScorer
    from mama_pipeline.store import Store
    from mama_pipeline_tests.support.fake_llm_server import running_server

    with tempfile.TemporaryDirectory() as tmp, running_server(delay=delay) as server:
        store = Store(Path(tmp) / "bench.duckdb")
        store.ensure_tables(CACHE_TABLE)
        # the pipeline step reads the first stage's run with Store.read_table before it reranks (a process's first
        # DuckDB read into polars imports pyarrow and pandas, ~0.2 s): one such read here too, before the timed call
        with store.connect(write=True) as con:
            con.execute("CREATE TABLE first_stage_run AS SELECT 'q' AS query_id, 'c' AS chunk_id")
        w0 = time.perf_counter()
        store.read_table("first_stage_run")
        warm = time.perf_counter() - w0
        params = RerankEndpointBackend(type="endpoint", base_url=server.url, model="fake", concurrency=concurrency)
        scorer = EndpointScorer(params)
        timed = ScoringPhase(scorer)
        t0, c0, s0 = time.perf_counter(), time.process_time(), process_cpu(server.pid)
        hits, failed, stats = rerank_hits(candidates, timed, store, log=lambda m: None)
        wall, cpu, server_cpu = time.perf_counter() - t0, time.process_time() - c0, process_cpu(server.pid) - s0
        assert not failed and hits.height == candidates.height and server.stats()["rerank_calls"] == scorer.calls
        bare = bare_poster(candidates, params)
        ideal = scorer.calls * delay / concurrency
        queries = candidates["query_id"].n_unique()
        log(
            f"endpoint: {queries} queries x {candidates.height // queries} candidates = {stats.pairs} pairs, "
            f"{scorer.calls} requests, {delay * 1000:.0f} ms answers, concurrency {concurrency}"
        )
        log(f"  (untimed, before: one Store.read_table, as the step reads the first stage's run: {warm:.2f} s)")
        log(
            f"  fresh cache: wall {wall:.2f} s, ideal {ideal:.2f} s -> {100 * ideal / wall:.1f}% of ideal "
            f"({queries / wall:.0f} queries/s, {stats.pairs / wall:.0f} pairs/s) [{load()}]"
        )
        log(
            f"  of which requests in flight (the scorer's phase): {timed.seconds:.2f} s -> {100 * ideal / timed.seconds:.1f}% "
            f"of ideal (the pairs are hashed and grouped while requests are in flight); before it (cache lookup, the "
            f"first batch of queries prepared) and after it (last cache write, hits): {wall - timed.seconds:.2f} s"
        )
        log(
            f"  bare poster (the same requests' bodies made beforehand, posted at concurrency {concurrency}; no "
            f"preparation, answer parsing or cache): {bare:.2f} s -> {100 * ideal / bare:.1f}% of ideal; the backend's "
            f"whole call reaches {100 * bare / wall:.1f}% of the bare poster's throughput [{load()}]"
        )
        log(
            f"  CPU per request: client {1000 * cpu / scorer.calls:.2f} ms (whole process: set-up, requests, cache "
            f"writes), server {1000 * server_cpu / scorer.calls:.2f} ms; the client alone could sustain "
            f"{scorer.calls / cpu:.0f} requests/s against an ideal {concurrency / delay:.0f}/s"
        )
        again = EndpointScorer(params)
        t1 = time.perf_counter()
        hits2, _, stats2 = rerank_hits(candidates, again, store, log=lambda m: None)
        log(
            f"  re-run: {again.calls} requests, {stats2.from_cache} pairs from the cache, "
            f"{time.perf_counter() - t1:.2f} s, identical: {hits2.equals(hits)} [{load()}]"
        )


def bare_poster(candidates: pl.DataFrame, params) -> float:
    """Seconds to post every query's request body, built beforehand, with ``JsonPoster`` alone (what the round
    trips cost on this machine with this server, whatever the backend does around them)."""
    import asyncio
    import json

    from mama_pipeline.retrieval._endpoint_client import JsonPoster
    from mama_pipeline.retrieval._rerank_backends import rerank_body

    bodies = [
        rerank_body(params, json.dumps(g["query_text"][0]).encode(), [json.dumps(t).encode() for t in g["text"]])
        for _, g in candidates.group_by("query_id", maintain_order=True)
    ]

    async def post_all() -> float:
        poster, sem = JsonPoster(params), asyncio.Semaphore(params.concurrency)

        async def one(body: bytes) -> None:
            async with sem:
                await poster.post(params.path, body)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        seconds = time.perf_counter() - t0
        await poster.close()
        return seconds

    return asyncio.run(post_all())


class ScoringPhase:
    """A scorer that records how long its scoring phase (every request in flight) took."""

    def __init__(self, scorer) -> None:
        self.scorer, self.seconds = scorer, 0.0
        self.model_key, self.label, self.max_length = scorer.model_key, scorer.label, scorer.max_length

    def score(self, groups, done) -> None:
        t0 = time.perf_counter()
        self.scorer.score(groups, done)
        self.seconds = time.perf_counter() - t0


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cross_encoder(candidates: pl.DataFrame, n_queries: int, max_length: int, batch_size: int, repeats: int) -> None:
    from mama_pipeline.retrieval._kinds.rerank_kind import CrossEncoderBackend
    from mama_pipeline.retrieval._rerank import rerank_hits
    from mama_pipeline.retrieval._rerank_backends import CrossEncoderScorer, untrained_minilm_cross_encoder
    from mama_pipeline.store import Store

    subset = candidates.filter(
        pl.col("query_id").is_in(candidates["query_id"].unique().sort().head(n_queries).implode())
    )
    params = CrossEncoderBackend(
        type="cross_encoder", untrained_minilm=True, max_length=max_length, batch_size=batch_size
    )
    scorer = CrossEncoderScorer(params, Path)
    bare = untrained_minilm_cross_encoder(max_length)
    per_query = [list(zip(g["query_text"], g["text"])) for _, g in subset.group_by("query_id", maintain_order=True)]

    def ours() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            _, failed, stats = rerank_hits(subset, scorer, Store(Path(tmp) / "bench.duckdb"), log=lambda m: None)
            assert not failed and stats.scored_now == subset.height

    def loop() -> None:
        for pairs in per_query:
            bare.predict(pairs, batch_size=batch_size, show_progress_bar=False)

    timings: dict[str, list[tuple[float, float]]] = {"ours": [], "bare": []}
    for r in range(repeats):
        for name, fn in (("bare", loop), ("ours", ours)) if r % 2 == 0 else (("ours", ours), ("bare", loop)):
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            timings[name].append((time.perf_counter() - w0, time.process_time() - c0))
            log(
                f"  {name} repeat {r + 1}: wall {timings[name][-1][0]:.1f} s, CPU {timings[name][-1][1]:.1f} s [{load()}]"
            )
    best = {k: min(w for w, _ in v) for k, v in timings.items()}
    cpu = {k: min(c for _, c in v) for k, v in timings.items()}
    log(
        f"cross-encoder: {subset.height} pairs ({n_queries} queries x 100), max_length {max_length}, "
        f"batch {batch_size}, best of {repeats}"
    )
    log(
        f"  bare predict loop: {subset.height / best['bare']:.1f} pairs/s wall, {subset.height / cpu['bare']:.1f} "
        f"pairs/CPU-s; backend: {subset.height / best['ours']:.1f} pairs/s wall, "
        f"{subset.height / cpu['ours']:.1f} pairs/CPU-s"
    )
    log(
        f"  backend / bare throughput: {100 * best['bare'] / best['ours']:.1f}% wall, "
        f"{100 * cpu['bare'] / cpu['ours']:.1f}% CPU [{load()}]"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(ROOT / "bench_out" / "rerank"))
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--ce-queries", type=int, default=20)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip", choices=["endpoint", "cross_encoder"], action="append", default=[])
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    candidates = bm25_candidates(work, args.depth)
    if "endpoint" not in args.skip:
        endpoint(candidates, args.delay, args.concurrency)
    if "cross_encoder" not in args.skip:
        cross_encoder(candidates, args.ce_queries, args.max_length, args.batch_size, args.repeats)


if __name__ == "__main__":
    main()
