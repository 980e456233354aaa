"""Scoreboard at release scale: 6 retrievers x 3,185 queries x top-20 over 230,000 graded labels.

Generated data (seeded): each query has a pool of 73 chunks, 230,000 of the pooled
pairs carry a label 0..6, each retriever ranks 20 chunks drawn from the pool.
Prints wall and CPU time of the scoreboard (target: under 15 s wall), then of the
paired significance tests with the default settings, and peak memory.

    .venv/bin/python benchmarks/evaluation_scale.py
"""

from __future__ import annotations

import resource
import time

import numpy as np
import polars as pl

from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard
from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan
from mama_pipeline.evaluation._significance import pairwise_significance
from mama_pipeline.evaluation.settings import EvaluationSettings

N_QUERIES, POOL, TOP_K, N_LABELS = 3185, 73, 20, 230_000
RETRIEVERS = ["bm25", "medcpt", "octen", "voyage", "lateon", "gecko"]


def generate(seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    rng = np.random.default_rng(seed)
    query_ids = [f"q_{i:05d}" for i in range(1, N_QUERIES + 1)]
    pool_q = np.repeat(np.arange(N_QUERIES), POOL)
    pool_c = np.tile(np.arange(POOL), N_QUERIES)
    keep = np.sort(rng.choice(pool_q.size, N_LABELS, replace=False))
    labels = rng.choice(7, N_LABELS, p=[0.45, 0.1, 0.1, 0.1, 0.1, 0.1, 0.05])
    qrels = pl.DataFrame(
        {
            "query_id": np.array(query_ids)[pool_q[keep]],
            "doc_id": [f"c{q}_{c}" for q, c in zip(pool_q[keep], pool_c[keep])],
            "relevance": labels,
        }
    )
    frames = []
    for name in RETRIEVERS:
        picks = np.argsort(rng.random((N_QUERIES, POOL)), axis=1)[:, :TOP_K]
        q = np.repeat(np.arange(N_QUERIES), TOP_K)
        frames.append(
            pl.DataFrame(
                {
                    "retriever": name,
                    "query_id": np.array(query_ids)[q],
                    "doc_id": [f"c{a}_{b}" for a, b in zip(q, picks.ravel())],
                    "rank": np.tile(np.arange(1, TOP_K + 1), N_QUERIES),
                }
            )
        )
    return pl.concat(frames), qrels, query_ids


def main() -> None:
    run, qrels, query_ids = generate()
    print(f"run rows {run.height:,}, labels {qrels.height:,}, queries {len(query_ids):,}")
    settings = EvaluationSettings()
    plan = mamaretrieval_plan(settings.cutoffs, settings.lenient, settings.strict, settings.max_grade)
    wall, cpu = time.perf_counter(), time.process_time()
    evaluation = evaluate(run, qrels, query_ids, plan, RETRIEVERS)
    board = scoreboard(evaluation, qrels)
    print(
        f"scoreboard: {len(plan.measures())} measures, {evaluation.per_query.height:,} per-query values, "
        f"{board.height} scoreboard rows: wall {time.perf_counter() - wall:.2f} s (target < 15 s), "
        f"CPU {time.process_time() - cpu:.2f} s"
    )
    wall, cpu = time.perf_counter(), time.process_time()
    sig = pairwise_significance(
        evaluation.per_query,
        settings.significance_measures,
        RETRIEVERS,
        n_resamples=settings.resamples,
        seed=settings.seed,
    )
    print(
        f"significance: {sig.height} rows (15 pairs x {len(settings.significance_measures)} default measures, "
        f"{settings.resamples:,} bootstrap + {settings.resamples:,} randomization resamples each): "
        f"wall {time.perf_counter() - wall:.2f} s, CPU {time.process_time() - cpu:.2f} s"
    )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of the process): {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
