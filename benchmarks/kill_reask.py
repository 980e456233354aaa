"""Prompts asked again after SIGKILLs during judging, per kill and in all.

A judging process (``mama_pipeline_tests.support.kill_worker``: the judging step's
``judge_pairs`` and LLM client) judges a synthetic pool against the local fake
server; it is SIGKILLed ``--kills`` times at a random point 1 to 4 s after its
first request, then runs to the end. ``--prefill`` rows of other answers are put in
the cache first, so that DuckDB writes cost what they cost with a cache of that
size (the paper's judging cache holds about 287,000). The server lists the
distinct requests of each run; a request a run sends that an earlier run sent too
was asked again. A kill unavoidably re-asks what was in flight (sent, not yet
answered: read at the server just before the kill); the rest is what the killed
process had got but not made durable, shown in seconds of that run's answer rate.

Run from the repository root (a few minutes on 2 cores):
    nice -n 5 .venv/bin/python -m benchmarks.kill_reask [--queries 1000 --per-query 20 --kills 10 --prefill 280000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mama_pipeline.judging.settings import JudgingSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import running_server


def prefill(store: Store, rows: int) -> None:
    """``rows`` answers of other requests in the cache (keys that no pair of the pool has)."""
    store.ensure_tables("llm_responses", "llm_failures")
    with store.connect(write=True) as con:
        con.execute(
            """INSERT INTO llm_responses BY NAME
               SELECT sha256('prefill ' || i) AS cache_key, 'judge' AS stage, 'other-endpoint' AS endpoint,
                      'fake-model' AS model, 'relevance_judge' AS template_id, 'h' AS template_hash,
                      's' AS schema_hash, 'ok' AS status,
                      '{"reasoning": "a cached answer of about the size of a judge verdict ' || i || '", '
                      || '"d1_topic": true, "d2_meaningful": 1, "d3_actionable": 2, "d4_density": 1}' AS raw_text,
                      'a cached answer of about the size of a judge verdict' AS reasoning,
                      '{"d1_topic":true,"d2_meaningful":1,"d3_actionable":2,"d4_density":1}' AS parsed_json,
                      120::BIGINT AS prompt_tokens, 40::BIGINT AS completion_tokens, 0::BIGINT AS cached_tokens,
                      1 AS attempts, 0.2 AS latency_s, now()::TIMESTAMP AS created_at
               FROM range(?) t(i)""",
            [rows],
        )


def distinct_requests(port: int) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as r:
        return {k for k in json.load(r) if k.startswith("distinct:")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--per-query", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=5000)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--prefill", type=int, default=280_000)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--batch-pairs", type=int, default=JudgingSettings().batch_pairs)
    ap.add_argument("--flush-every-s", type=float, default=0.5)  # the client's default
    ap.add_argument("--seed", type=int, default=20250715)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pairs = args.queries * args.per_query
    worker = [
        sys.executable,
        "-m",
        "mama_pipeline_tests.support.kill_worker",
        "--queries",
        str(args.queries),
        "--per-query",
        str(args.per_query),
        "--chunks",
        str(args.chunks),
        "--concurrency",
        str(args.concurrency),
        "--batch-pairs",
        str(args.batch_pairs),
        "--flush-every-s",
        str(args.flush_every_s),
    ]
    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        db = Path(tmp) / "mama.duckdb"
        t0 = time.perf_counter()
        prefill(Store(db), args.prefill)
        print(
            f"{pairs} pairs ({args.queries} queries x {args.per_query}), {args.delay * 1000:.0f} ms answers, "
            f"concurrency {args.concurrency}, batches of {args.batch_pairs}, answer log flushed every "
            f"{args.flush_every_s} s; cache pre-filled with {args.prefill} rows in {time.perf_counter() - t0:.1f} s"
        )
        asked: set[str] = set()
        per_kill: list[
            tuple[int, int, float]
        ] = []  # (in flight at the kill, answers/s of the killed run, re-asked after)
        total_sent = 0
        for cycle in range(args.kills + 1):
            server.reset()
            proc = subprocess.Popen(
                [*worker, str(db), server.url],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            if cycle < args.kills:
                while server.stats()["chat_calls"] == 0 and proc.poll() is None:
                    time.sleep(0.01)
                first = time.perf_counter()
                time.sleep(rng.uniform(1.0, 4.0))
                stats = server.stats()
                os.killpg(proc.pid, signal.SIGKILL)  # the whole process tree
                elapsed = time.perf_counter() - first
                in_flight = stats["chat_calls"] - stats.get("answered", 0)
                per_kill.append((in_flight, stats.get("answered", 0) / elapsed, 0))
            _, err = proc.communicate()
            if cycle == args.kills and proc.returncode != 0:
                raise SystemExit(f"the last run failed:\n{err[-3000:]}")
            sent = distinct_requests(server.port)
            if cycle:
                in_flight, rate, _ = per_kill[cycle - 1]
                per_kill[cycle - 1] = (in_flight, rate, len(sent & asked))
            total_sent += len(sent)
            asked |= sent
        missing = pairs - len(asked)
        print(
            f"{'kill':>4} {'in flight':>9} {'answers/s':>9} {'re-asked':>8} {'beyond in flight':>16} {'= seconds':>9}"
        )
        for n, (in_flight, rate, again) in enumerate(per_kill, 1):
            beyond = max(0, again - in_flight)
            print(f"{n:>4} {in_flight:>9} {rate:>9.0f} {again:>8} {beyond:>16} {beyond / rate if rate else 0:>9.2f}")
        reasked = total_sent - len(asked)
        worst = max((max(0, a - f) / r for f, r, a in per_kill if r), default=0.0)
        print(
            f"re-asked {reasked} of {pairs} pairs = {100 * reasked / pairs:.2f}% after {args.kills} kills "
            f"({reasked / max(args.kills, 1):.0f} per kill); beyond what was in flight at most {worst:.2f} s of "
            f"answers per kill; {len(asked)} distinct prompts asked, {missing} pairs never asked"
        )


if __name__ == "__main__":
    main()
