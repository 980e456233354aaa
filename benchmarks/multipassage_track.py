"""The multi-passage track at benchmark scale.

1. 1,000 candidate sets through question writing and verification (each chunk alone, then the set) against
   the local fake server answering in 200 ms, concurrency 64: wall time and share of the ideal throughput
   (requests x 0.2 s / 64 per phase).
2. Scoring six retrievers on the track (1,000 questions, top-20 rankings, graded labels of a 30-chunk pool):
   track measures (alpha-nDCG, piece recall, all pieces in) and headline measures, per tier, paired tests
   with the default 5,000 resamples: wall time.

The load average is printed beside each figure (the machine is shared).

    .venv/bin/python -m benchmarks.multipassage_track [--sets 1000] [--delay 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.multipassage._multipassage_prompts import (
    fact_check_template,
    verifier_model,
    verifier_template,
    writer_template,
)
from mama_pipeline.multipassage._multipassage_scoreboard import score_track
from mama_pipeline.multipassage._questions import (
    decide,
    run_fact_checks,
    run_writer,
    status_counts,
    verifier_requests,
    written_questions,
)
from mama_pipeline.multipassage.settings import MultipassageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import running_server

RETRIEVERS = ["bm25", "medcpt", "octen", "voyage", "lateon", "gecko"]
TIERS = ["very_high", "high", "moderate_high", "moderate", "low_moderate"]


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def candidate_frame(n: int, seed: int = 0) -> tuple[pl.DataFrame, dict[str, dict]]:
    rng = np.random.default_rng(seed)
    sizes = rng.choice([2, 3], n)
    chunk_ids = [[f"c{i}_{j}" for j in range(k)] for i, k in enumerate(sizes)]
    chunks = {
        c: {"source": f"src-{i % 19}", "section": "Section", "text": f"Passage {c}: " + "clinical text " * 40}
        for i, ids in enumerate(chunk_ids)
        for c in ids
    }
    sets = pl.DataFrame(
        {
            "set_id": [f"ms_{i:016x}" for i in range(n)],
            "kind": ["section" if k == 2 else "cross_source" for k in sizes],
            "size": sizes.astype(np.int64),
            "chunk_ids": chunk_ids,
            "source": [f"src-{i % 19}" for i in range(n)],
            "tier": [TIERS[i % len(TIERS)] for i in range(n)],
            "corpus_version": ["v-bench"] * n,
        }
    )
    return sets, chunks


def writing_and_verification(args) -> None:
    sets, chunks = candidate_frame(args.sets)
    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        store = Store(Path(tmp) / "bench.duckdb")
        cfg = StageSettings(base_urls=[server.url], model="fake", concurrency=args.concurrency, reasoning="server")

        def client(stage: str) -> LLMClient:
            return LLMClient(stage, cfg, store, endpoint=server.url, model="fake", resolve_urls=lambda: [server.url])

        w_tpl, v_tpl, f_tpl = writer_template(30, False), verifier_template(False), fact_check_template(False)
        c0 = time.process_time()
        t0 = time.perf_counter()
        w_reports = run_writer(client("query_writer"), w_tpl, False, sets, chunks)
        w_results = [r for report in w_reports.values() for r in report.results]
        t_w = time.perf_counter() - t0
        written = written_questions(sets, w_results, 30)
        judge = client("judge")
        t1 = time.perf_counter()
        v = judge.run(v_tpl, verifier_model(False), verifier_requests(written, sets, chunks, v_tpl))
        f_reports = run_fact_checks(judge, f_tpl, False, written, chunks).values()
        t_v = time.perf_counter() - t1
        v_results = v.results + [r for report in f_reports for r in report.results]
        decisions = decide(
            sets, written, v_results, writer=("fake", w_tpl.hash), verifier=("fake", v_tpl.hash), temperature=0.0
        )
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        n_req = len(w_results) + len(v_results)
        reports = [*w_reports.values(), v, *f_reports]
        assert not any(r.failures for r in reports) and sum(r.calls for r in reports) == n_req
        ideal = n_req * args.delay / args.concurrency
        print(
            f"writing + verification: {args.sets} sets, {len(w_results)} writer + {len(v_results)} verifier requests, "
            f"{args.delay * 1000:.0f} ms answers, concurrency {args.concurrency}"
        )
        print(
            f"  writer   {t_w:.2f} s ({len(w_results) / t_w:.1f} req/s, "
            f"{100 * len(w_results) * args.delay / args.concurrency / t_w:.1f}% of ideal)"
        )
        print(
            f"  verifier {t_v:.2f} s ({len(v_results) / t_v:.1f} req/s, "
            f"{100 * len(v_results) * args.delay / args.concurrency / t_v:.1f}% of ideal)"
        )
        print(
            f"  total    {wall:.2f} s for {n_req} requests (ideal {ideal:.2f} s) -> {100 * ideal / wall:.1f}% of the "
            f"ideal throughput; client process CPU {cpu:.2f} s  [{load()}]"
        )
        print(f"  outcomes: {status_counts(decisions)}")


def scoring(args) -> None:
    rng = np.random.default_rng(1)
    n, pool, depth = args.sets, 30, 20
    sizes = rng.choice([2, 3], n)
    qids = [f"mq_{i:05d}" for i in range(1, n + 1)]
    set_ids = [[f"c{i}_{j}" for j in range(k)] for i, k in enumerate(sizes)]
    questions = pl.DataFrame(
        {
            "query_id": qids,
            "chunk_ids": set_ids,
            "fact_chunk_ids": [ids + ids[:1] for ids in set_ids],
            "tier": [TIERS[i % len(TIERS)] for i in range(n)],
        }
    )
    # the judge finds each question's last fact in a tenth of the other pooled chunks too
    fact_labels = pl.DataFrame(
        {
            "query_id": np.repeat(qids, pool),
            "chunk_id": [f"c{i}_{j}" for i in range(n) for j in range(pool)],
            "facts": [[k + 1] if rng.random() < 0.1 else [] for k in sizes for _ in range(pool)],
        }
    )
    labels = pl.DataFrame(
        {
            "query_id": np.repeat(qids, pool),
            "chunk_id": [f"c{i}_{j}" for i in range(n) for j in range(pool)],
            "score": rng.choice(7, n * pool, p=[0.45, 0.1, 0.1, 0.1, 0.1, 0.1, 0.05]),
        }
    )
    frames = []
    for r, name in enumerate(RETRIEVERS):
        picks = np.argsort(rng.random((n, pool)) - r * 0.02 * (np.arange(pool) < 3), axis=1)[:, :depth]
        frames.append(
            pl.DataFrame(
                {
                    "query_id": np.repeat(qids, depth),
                    "retriever": name,
                    "rank": np.tile(np.arange(1, depth + 1), n).astype(np.int32),
                    "chunk_id": [f"c{i}_{j}" for i in range(n) for j in picks[i]],
                    "score": np.tile(-np.arange(depth, dtype=float), n),
                }
            )
        )
    rankings = pl.concat(frames)
    mp, ev = MultipassageSettings(), EvaluationSettings()
    c0, t0 = time.process_time(), time.perf_counter()
    scores = score_track(rankings, labels, fact_labels, questions, RETRIEVERS, mp, ev)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"scoring: {len(RETRIEVERS)} retrievers x {n} questions x top-{depth}, {labels.height} labels, "
        f"{len(scores.measures)} measures, {scores.significance.height} paired tests ({ev.resamples} resamples, "
        f"all questions and per tier)"
    )
    print(f"  wall {wall:.2f} s, process CPU {cpu:.2f} s  [{load()}]")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=1000)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    print(f"start [{load()}]")
    writing_and_verification(args)
    scoring(args)


if __name__ == "__main__":
    main()
