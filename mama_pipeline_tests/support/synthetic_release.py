"""Synthetic mamaretrieval release inputs of the published v0.2.0 shape: 63,650 chunks of about 200 words, 3,185
queries, six retrievers' top-20 and a pool of about 70 pairs per query, every pair labelled with about 80 words
of reasoning (judgments gated at D1 as the judge's are). Used by benchmarks/release_build.py and the release tests.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from mama_pipeline.corpus._hashing import chunk_id
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, JudgeVerdictsWithReasoning, label_prompt_hash
from mama_pipeline.queries._query_prompt import QueryAnswerWithReasoning, query_writer_template
from mama_pipeline.release._mamaretrieval import CorpusInfo, MamaretrievalInputs, PromptInfo

RETRIEVERS = ["bm25", "medcpt", "octen", "voyage", "lateon", "gecko"]
CANDIDATES = 90  # chunks per query that the retrievers draw their top-20 from (union about 70)


def words(rng: np.random.Generator, vocab: np.ndarray, n_texts: int, n_words: int) -> list[str]:
    picks = rng.integers(0, len(vocab), size=(n_texts, n_words))
    return [" ".join(vocab[row]) for row in picks]


def synthetic_inputs(scale: float, seed: int = 0) -> MamaretrievalInputs:
    """Release inputs of the published v0.2.0 shape at ``scale`` (1.0: full size), seeded."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(5000)])
    n_chunks, n_queries = int(63_650 * scale), int(3_185 * scale)
    texts = [f"{i} {t}" for i, t in enumerate(words(rng, vocab, n_chunks, 200))]
    ids = [chunk_id(t) for t in texts]
    chunks = pl.DataFrame(
        {
            "chunk_id": ids,
            "source": [f"source-{i % 87}" for i in range(n_chunks)],
            "page": [i % 400 for i in range(n_chunks)],
            "breadcrumb": [["Chapter", "Section"]] * n_chunks,
            "text": texts,
            "corpus_version": ["f" * 16] * n_chunks,
        }
    )
    writer = query_writer_template(20, True)
    qids = [f"q_{i + 1:05d}" for i in range(n_queries)]
    seeds = rng.integers(0, n_chunks, size=n_queries)
    queries = pl.DataFrame(
        {
            "query_id": qids,
            "query_text": words(rng, vocab, n_queries, 12),
            "seed_chunk_id": [ids[s] for s in seeds],
            "source": [f"source-{s % 19}" for s in seeds],
            "tier": ["high"] * n_queries,
            "model": ["writer"] * n_queries,
            "prompt_hash": [writer.hash] * n_queries,
        }
    )
    id_array = np.array(ids)
    rows_q, rows_r, rows_rank, rows_c = [], [], [], []
    for q in qids:
        cand = rng.choice(n_chunks, size=CANDIDATES, replace=False)
        for r in RETRIEVERS:
            top = rng.choice(cand, size=20, replace=False)
            rows_q += [q] * 20
            rows_r += [r] * 20
            rows_rank += list(range(1, 21))
            rows_c.append(id_array[top])
    rankings = pl.DataFrame(
        {"query_id": rows_q, "retriever": rows_r, "rank": rows_rank, "chunk_id": np.concatenate(rows_c)}
    ).with_columns(score=1.0 / pl.col("rank"))
    pool = rankings.select("query_id", "chunk_id").unique()
    n = pool.height
    d1 = rng.random(n) < 0.6
    d2, d3, d4 = (rng.integers(0, 3, size=n) for _ in range(3))
    d3 = np.minimum(d3, d2)
    score = np.where(d1, d2 + d3 + d4, 0)
    judge_hash = label_prompt_hash(RELEVANCE_JUDGE, JudgeVerdictsWithReasoning)
    judgments = pool.with_columns(
        judge_model=pl.lit("judge"),
        prompt_hash=pl.lit(judge_hash),
        d1_topic=pl.Series(d1),
        d2_meaningful=pl.Series(d2).cast(pl.Int8),
        d3_actionable=pl.Series(d3).cast(pl.Int8),
        d4_density=pl.Series(d4).cast(pl.Int8),
        structural_violation=pl.lit(False),
        score=pl.Series(score).cast(pl.Int8),
        reasoning=pl.Series(words(rng, vocab, n, 80)),
        corpus_version=pl.lit("f" * 16),
    ).with_columns(  # scoring stops at the gate: D2..D4 are null when D1 is false
        pl.when(pl.col("d1_topic")).then(pl.col(c)).alias(c) for c in ("d2_meaningful", "d3_actionable", "d4_density")
    )
    return MamaretrievalInputs(
        version="bench",
        chunks=chunks,
        queries=queries,
        rankings=rankings,
        judgments=judgments,
        pooled_pairs=pool,
        corpus=CorpusInfo("bench", None, None, "body"),
        query_writer=PromptInfo(writer, QueryAnswerWithReasoning.model_json_schema(), writer.hash, 0.0, False),
        judge=PromptInfo(RELEVANCE_JUDGE, JudgeVerdictsWithReasoning.model_json_schema(), judge_hash, 0.0, False),
        retrievers=[{"name": r, "kind": "imported"} for r in RETRIEVERS],
        pool_depth=20,
        include_seed_chunk=False,
    )
