"""The robustness track at release scale against the local fake server.

Three figures, in one run:

1. rewrite stage: every query through the two LLM kinds (telegraphic, codeswitch) and the
   same-information gate (a second call per usable rewrite), fake server at ``--delay`` s per
   answer and ``--concurrency`` requests in flight: requests/s as a share of the ideal
   concurrency / delay, beside the bare shared client on the same server in the same run (as many
   requests, with the rewrite prompt, in one client run: what the machine allows); the deterministic kinds,
   typo / shorthand / hurried, are timed too;
2. holes: six synthetic retrievers rank every kept variant; each ranking is its parent's clean
   top-20 with a kind-dependent share of slots replaced by nearby unjudged chunks (a synthetic
   model of what a noisier query surfaces, not a measured one); the holes (unlabelled
   (parent, chunk) pairs in any variant or clean top-20; every clean top-20 is pooled here) are judged
   through ``judge_pairs``: pairs judged, pairs/s;
3. scoring: the clean-versus-variant scoreboard of six retrievers on all kinds (ir_measures, BCa
   bootstrap and randomization test at ``--resamples``, Holm, every tier): seconds.

Run from the repository root:
    .venv/bin/python -m benchmarks.robustness_scale [--queries 3185] [--delay 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import tempfile
import time
from pathlib import Path

import polars as pl

from mama_pipeline.evaluation._per_query_scoring import run_in
from mama_pipeline.evaluation.settings import EvaluationSettings
from mama_pipeline.judging._judge import judge_pairs
from mama_pipeline.judging._rubric import output_model
from mama_pipeline.llm.client import LLMClient, LLMRequest
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.robustness._abbreviations import load_table
from mama_pipeline.robustness._labels import hole_pairs, label_needs, needs_in, variant_labels
from mama_pipeline.robustness._rewrite_prompt import rewrite_model, rewrite_template
from mama_pipeline.robustness._robustness_scoreboard import (
    in_table_order,
    labels_in,
    paired_slices,
    pairs_in,
    robustness_board,
)
from mama_pipeline.robustness._variants import (
    decisions_frame,
    deterministic_decisions,
    kept_variants,
    rewrite_decisions,
)
from mama_pipeline.robustness.settings import RobustnessSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import running_server
from mama_pipeline_tests.support.synthetic_judging import make_chunks

TIERS = ("very_high", "high", "moderate_high", "moderate", "low_moderate")
RETRIEVERS = ("bm25", "medcpt", "gemma", "octen", "voyage", "lateon")
REPLACED = {"typo": 0.03, "shorthand": 0.02, "hurried": 0.04, "telegraphic": 0.05, "codeswitch": 0.08}
NEIGHBOURHOOD, EXTRA, DEPTH = 40, 20, 20
PHRASES = [
    "What is the loading dose of magnesium sulfate for severe pre-eclampsia in pregnancy",
    "How is postpartum haemorrhage managed with intravenous oxytocin within 24 hours",
    "When should a pregnant patient with high blood pressure be referred",
    "How often is the fetal heart rate checked in active labour",
    "Which antibiotics are given for premature rupture of membranes",
]


def make_queries(n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": [f"q_{i:05d}" for i in range(1, n + 1)],
            "query_text": [f"{PHRASES[i % len(PHRASES)]} (case {i})?" for i in range(1, n + 1)],
            "tier": [TIERS[i % len(TIERS)] for i in range(n)],
            "source": ["src-a"] * n,
        }
    )


def neighbourhood(i: int, n_chunks: int) -> list[int]:
    return [(i * 11 + j) % n_chunks for j in range(NEIGHBOURHOOD + EXTRA)]


def clean_rankings(queries: pl.DataFrame, cids: list[str]) -> pl.DataFrame:
    rows = []
    for i, q in enumerate(queries["query_id"].to_list()):
        near = neighbourhood(i, len(cids))[:NEIGHBOURHOOD]
        for r in RETRIEVERS:
            order = random.Random(f"{q}|{r}").sample(near, DEPTH)
            rows += [(q, r, rank, cids[c], float(DEPTH - rank)) for rank, c in enumerate(order, start=1)]
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "retriever": pl.String,
            "rank": pl.Int32,
            "chunk_id": pl.String,
            "score": pl.Float64,
        },
        orient="row",
    )


def variant_rankings(
    variants: pl.DataFrame, clean: pl.DataFrame, index: dict[str, int], cids: list[str]
) -> pl.DataFrame:
    by_parent = {(q, r): g["chunk_id"].to_list() for (q, r), g in clean.group_by("query_id", "retriever")}
    rows = []
    for vid, parent, kind in variants.select("variant_id", "parent_id", "kind").iter_rows():
        extra = [cids[c] for c in neighbourhood(index[parent], len(cids))[NEIGHBOURHOOD:]]
        for r in RETRIEVERS:
            rng = random.Random(f"{vid}|{r}")
            ranked = [rng.choice(extra) if rng.random() < REPLACED[kind] else c for c in by_parent[(parent, r)]]
            ranked = list(dict.fromkeys(ranked))
            rows += [(vid, r, rank, c, float(DEPTH - rank)) for rank, c in enumerate(ranked, start=1)]
    return pl.DataFrame(
        rows,
        schema={
            "query_id": pl.String,
            "retriever": pl.String,
            "rank": pl.Int32,
            "chunk_id": pl.String,
            "score": pl.Float64,
        },
        orient="row",
    )


def synthetic_labels(pairs: pl.DataFrame) -> pl.DataFrame:
    score = (pl.col("chunk_id").hash(7) % 7).cast(pl.Int8)
    return pairs.select("query_id", "chunk_id").with_columns(
        score=score,
        d1_topic=score > 0,
        d2_meaningful=pl.lit(1, pl.Int8),
        d3_actionable=pl.lit(1, pl.Int8),
        d4_density=pl.lit(1, pl.Int8),
        judge_model=pl.lit("fake-judge"),
        prompt_hash=pl.lit("h"),
    )


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=3185)
    ap.add_argument("--chunks", type=int, default=20000)
    ap.add_argument("--delay", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--resamples", type=int, default=EvaluationSettings().resamples)
    args = ap.parse_args()
    r = RobustnessSettings()
    queries, chunks = make_queries(args.queries), make_chunks(args.chunks)
    cids = chunks["chunk_id"].to_list()
    ideal = args.concurrency / args.delay
    print(
        f"{args.queries} queries x {len(r.kinds)} kinds; fake server {args.delay * 1000:.0f} ms, "
        f"concurrency {args.concurrency} (ideal {ideal:.0f} requests/s); {load()}"
    )

    with tempfile.TemporaryDirectory() as tmp, running_server(delay=args.delay) as server:
        store = Store(Path(tmp) / "bench.duckdb")

        def client(stage: str) -> LLMClient:
            cfg = StageSettings(base_urls=[server.url], model="fake", concurrency=args.concurrency)
            return LLMClient(stage, cfg, store, endpoint=server.url, model="fake", resolve_urls=lambda: [server.url])

        template = rewrite_template("telegraphic", r.max_rewrite_words, False)
        bare = [
            LLMRequest(f"bare{i}{q}", template.render(query=f"baseline {i} {t}"))  # as many as the stage asks
            for i in range(4)
            for q, t in queries.select("query_id", "query_text").iter_rows()
        ]
        t0 = time.perf_counter()
        base = client("query_rewriter").run(template, rewrite_model(False), bare)
        base_rate = base.calls / (time.perf_counter() - t0)
        print(f"bare client: {base.calls} HTTP calls at {base_rate:.1f}/s = {base_rate / ideal:.1%} of ideal; {load()}")
        t0 = time.perf_counter()
        table = load_table()
        rows = [row for k in r.kinds if k.steps for row in deterministic_decisions(queries, k, table, r)]
        det_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        run = rewrite_decisions(
            lambda stage: contextlib.nullcontext(client(stage)),
            queries,
            [k for k in r.kinds if k.rewrite],
            r,
            False,
            False,
        )
        llm_s = time.perf_counter() - t0
        requests = sum(v for k, v in run.metadata.items() if k.endswith("/requests"))
        calls = sum(v for k, v in run.metadata.items() if k.endswith("/http_calls"))
        decisions = decisions_frame(rows + run.decisions)
        variants = kept_variants(decisions, queries)
        print(f"deterministic kinds: {len(rows)} decisions in {det_s:.1f} s")
        print(
            f"rewrite stage: {requests} requests ({calls} HTTP calls) in {llm_s:.1f} s = {calls / llm_s:.1f}/s, "
            f"{calls / llm_s / ideal:.1%} of ideal, {calls / llm_s / base_rate:.1%} of the bare client; {load()}"
        )
        counts = decisions.group_by("kind", "status").len().sort("kind", "status")
        print("decisions: " + "; ".join(f"{k}/{s}={n}" for k, s, n in counts.iter_rows()))

        index = {q: i for i, q in enumerate(queries["query_id"].to_list())}
        clean = clean_rankings(queries, cids)
        ranked = variant_rankings(variants, clean, index, cids)
        pool = clean.filter(pl.col("rank") <= DEPTH).select("query_id", "chunk_id").unique()
        judgments = synthetic_labels(pool)
        holes = hole_pairs(variants, ranked, clean, judgments, DEPTH)
        t0 = time.perf_counter()
        judged = judge_pairs(
            client("judge"),
            store,
            holes.select(pl.col("parent_id").alias("query_id"), "chunk_id"),
            queries,
            chunks,
            output_model("json_field"),
        )
        judge_s = time.perf_counter() - t0
        labelled = judged.outcomes.filter(pl.col("status") == "labelled")
        print(
            f"holes: {holes.height} (parent, chunk) pairs in {variants.height} variants' (and parents') top-{DEPTH} of "
            f"{len(RETRIEVERS)} retrievers (pool {pool.height} pairs); judged {labelled.height} "
            f"({judged.calls} HTTP calls) in {judge_s:.1f} s = {judged.calls / judge_s:.1f}/s, "
            f"{judged.calls / judge_s / ideal:.1%} of ideal; {load()}"
        )

        labels = pl.concat(variant_labels(variants, needs_in(label_needs(judgments, labelled))))
        t0 = time.perf_counter()
        stats = EvaluationSettings(resamples=args.resamples)
        scored = paired_slices(
            run_in(clean), run_in(ranked), variants, labels_in(labels), stats, list(RETRIEVERS), DEPTH
        )
        pairs = pl.concat(in_table_order(scored))
        board = robustness_board(
            pairs_in(pairs), list(RETRIEVERS), variants, stats, f"Judged@{DEPTH}", r.coverage_tolerance
        )
        score_s = time.perf_counter() - t0
        tested = board.height
        print(
            f"scoring: {len(RETRIEVERS)} retrievers x {variants['kind'].n_unique()} kinds, {variants.height} "
            f"variants, {tested} tested comparisons (all tiers) at {args.resamples} resamples in {score_s:.1f} s; "
            f"{load()}"
        )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
