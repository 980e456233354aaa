"""A judging process for the SIGKILL test and benchmark: judges a synthetic pool against a server, then exits.

Run: ``python -m mama_pipeline_tests.support.kill_worker DB_PATH SERVER_URL [--queries 60 ...]``.
"""

from __future__ import annotations

import argparse

from mama_pipeline.judging._judge import judge_pairs
from mama_pipeline.judging._rubric import JudgeVerdictsWithReasoning
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries

QUERIES, CHUNKS, PER_QUERY, BATCH = 60, 150, 10, 40
SETTINGS = dict(model="fake-model", concurrency=4, timeout_s=5.0, backoff_base_s=0.01, backoff_max_s=0.05)


def corpus(queries: int = QUERIES, chunks: int = CHUNKS, per_query: int = PER_QUERY):
    q, c = make_queries(queries), make_chunks(chunks)
    return q, c, make_pool(q, c, per_query)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("url")
    ap.add_argument("--queries", type=int, default=QUERIES)
    ap.add_argument("--chunks", type=int, default=CHUNKS)
    ap.add_argument("--per-query", type=int, default=PER_QUERY)
    ap.add_argument("--batch-pairs", type=int, default=BATCH)
    ap.add_argument("--concurrency", type=int, default=SETTINGS["concurrency"])
    ap.add_argument("--flush-every-s", type=float, default=0.2)
    args = ap.parse_args()
    queries, chunks, pool = corpus(args.queries, args.chunks, args.per_query)
    store = Store(args.db)
    settings = StageSettings(base_urls=[args.url], **{**SETTINGS, "concurrency": args.concurrency})
    client = LLMClient(
        "judge",
        settings,
        store,
        endpoint="fake-endpoint",
        model="fake-model",
        resolve_urls=lambda: [args.url],
        flush_every_s=args.flush_every_s,
    )
    run = judge_pairs(client, store, pool, queries, chunks, JudgeVerdictsWithReasoning, batch_pairs=args.batch_pairs)
    print(run.metadata()["labelled"])


if __name__ == "__main__":
    main()
