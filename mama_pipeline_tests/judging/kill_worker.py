"""A judging process for the SIGKILL test: judges the synthetic pool against a server, then exits.

Run: ``python -m mama_pipeline_tests.judging.kill_worker DB_PATH SERVER_URL``.
"""
from __future__ import annotations

import sys

from mama_pipeline.judging.judge import judge_pairs
from mama_pipeline.judging.rubric import JudgeVerdictsWithReasoning
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.judging.synthetic import make_chunks, make_pool, make_queries

QUERIES, CHUNKS, PER_QUERY, BATCH = 60, 150, 10, 40
SETTINGS = dict(model="fake-model", concurrency=4, timeout_s=5.0, backoff_base_s=0.01, backoff_max_s=0.05)


def corpus():
    queries, chunks = make_queries(QUERIES), make_chunks(CHUNKS)
    return queries, chunks, make_pool(queries, chunks, PER_QUERY)


def main(db: str, url: str) -> None:
    queries, chunks, pool = corpus()
    store = Store(db)
    client = LLMClient("judge", StageSettings(base_urls=[url], **SETTINGS), store, endpoint="fake-endpoint",
                       model="fake-model", resolve_urls=lambda: [url], flush_every_s=0.2)
    run = judge_pairs(client, store, pool, queries, chunks, JudgeVerdictsWithReasoning, batch_pairs=BATCH)
    print(run.metadata()["labelled"])


if __name__ == "__main__":
    main(*sys.argv[1:3])
