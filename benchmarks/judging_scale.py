"""Judging at scale against the local fake server: throughput with persistence, re-run, 1% corpus change.

Phase 1 judges every pooled pair (labels committed to the label store, answers to
the client cache) and reports pairs/s as a share of the ideal concurrency / answer
time. Phase 2 re-runs unchanged: calls made (target 0). Phase 3 rewrites 1% of the
chunks (new text, so new chunk ids), rebuilds the pool over the new corpus and
re-runs: calls made against pairs touching changed chunks (target equal).

Run from the repository root:
    .venv/bin/python -m benchmarks.judging_scale [--queries 1000] [--per-query 20] [--chunks 5000]
Targets: >= 90% of ideal; 0 calls on re-run; calls == pairs touching changed chunks.

``--store PATH`` judges in that DuckDB file instead of an empty one, its answer cache and labels as they are
(e.g. a copy of a finished ``benchmarks/paper_multiple.py`` run's ``data/mama.duckdb``): the rate at that cache's
size. The pairs are new to it (the test server's port is in every cache key and judge identity); what is judged is
added to the file, so give it a copy.
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from pathlib import Path

import polars as pl

from mama_pipeline.judging._judge import judge_pairs
from mama_pipeline.judging._rubric import output_model
from mama_pipeline.judging.settings import JudgingSettings
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import running_server
from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--per-query", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=5000)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--batch-pairs", type=int, default=JudgingSettings().batch_pairs)
    ap.add_argument("--changed-share", type=float, default=0.01)
    ap.add_argument("--store", type=Path, help="judge in (a copy of) this store, its cache and labels kept")
    args = ap.parse_args()
    if args.store is not None and not args.store.is_file():
        ap.error(f"--store {args.store}: no such file (give a copy of a store's mama.duckdb)")

    queries, chunks = make_queries(args.queries), make_chunks(args.chunks)
    pool = make_pool(queries, chunks, args.per_query)
    model = output_model("json_field")
    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        store = Store(args.store or Path(tmp) / "bench.duckdb")
        labels_before = labels_in(store)
        if args.store:
            print(f"in {args.store}: {answers(store):,} cached answers, {labels_before:,} labels before")
        cfg = StageSettings(base_urls=[server.url], model="fake-judge", concurrency=args.concurrency)
        client = LLMClient(
            "judge", cfg, store, endpoint=server.url, model="fake-judge", resolve_urls=lambda: [server.url]
        )

        def run(pairs: pl.DataFrame, corpus: pl.DataFrame) -> tuple[float, int, pl.DataFrame, float]:
            before = server.stats()["chat_calls"]
            t0 = time.perf_counter()
            out = judge_pairs(client, store, pairs, queries, corpus, model, batch_pairs=args.batch_pairs)
            wall = time.perf_counter() - t0
            failed = out.outcomes.filter(pl.col("status") == "failed").height
            assert failed == 0, f"{failed} pairs failed"
            client_wall = out.client_metadata.get("judge/wall_s", 0.0)
            return wall, server.stats()["chat_calls"] - before, out.outcomes, client_wall

        wall, calls, _, client_wall = run(pool, chunks)
        ideal = args.concurrency / args.delay
        rate = pool.height / wall
        labels = labels_in(store) - labels_before
        print(
            f"phase 1: {pool.height} pairs ({args.queries} queries x {args.per_query}), {args.delay * 1000:.0f} ms "
            f"answers, concurrency {args.concurrency}, batches of {args.batch_pairs}"
        )
        print(
            f"  wall {wall:.2f} s, {rate:.1f} pairs/s, ideal {ideal:.0f}/s -> {100 * rate / ideal:.1f}% of ideal; "
            f"{calls} calls, {labels} labels stored"
        )
        print(
            f"  inside the shared client {client_wall:.2f} s ({pool.height / client_wall:.1f} pairs/s); judging layer "
            f"(holes, rendering, scoring, label commits) {wall - client_wall:.2f} s "
            f"= {1e6 * (wall - client_wall) / pool.height:.0f} us/pair"
        )

        wall, calls, _, _ = run(pool, chunks)
        print(f"phase 2 (re-run, nothing changed): {calls} calls, wall {wall:.2f} s")

        rng = random.Random(20250715)
        changed = sorted(rng.sample(range(args.chunks), round(args.chunks * args.changed_share)))
        chunks_v2 = make_chunks(
            args.chunks, version="v2", texts={j: f"Revised passage {j}: give drug {j % 7} once." for j in changed}
        )
        pool_v2 = make_pool(queries, chunks_v2, args.per_query)
        new_ids = set(chunks_v2["chunk_id"]) - set(chunks["chunk_id"])
        touching = pool_v2.filter(pl.col("chunk_id").is_in(list(new_ids))).height
        wall, calls, outcomes, _ = run(pool_v2, chunks_v2)
        print(
            f"phase 3 ({len(changed)} of {args.chunks} chunks changed): {calls} calls, {touching} pairs touch "
            f"changed chunks -> {'equal' if calls == touching else 'DIFFERENT'}; wall {wall:.2f} s; "
            f"{int((~outcomes['reused']).sum())} new labels"
        )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def answers(store: Store) -> int:
    return store.query("select count(*) n from llm_responses")["n"][0] if store.table_exists("llm_responses") else 0


def labels_in(store: Store) -> int:
    return store.query("select count(*) n from judgment_labels")["n"][0] if store.table_exists("judgment_labels") else 0


if __name__ == "__main__":
    main()
