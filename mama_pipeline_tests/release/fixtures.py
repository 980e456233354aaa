"""Small hand-made tables shaped like the corpus, queries, retrieval and judging assets."""

from __future__ import annotations

import polars as pl

from mama_pipeline.corpus._hashing import chunk_id
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, JudgeVerdictsWithReasoning, label_prompt_hash
from mama_pipeline.queries._query_prompt import QueryAnswerWithReasoning, query_writer_template
from mama_pipeline.release._mamaretrieval import CorpusInfo, MamaretrievalInputs, PromptInfo

CORPUS_VERSION = "c0ffee0000000001"
WRITER_TEMPLATE = query_writer_template(20, True)
JUDGE_HASH = label_prompt_hash(RELEVANCE_JUDGE, JudgeVerdictsWithReasoning)
TEXTS = [f"Give oxytocin 10 IU IM within one minute of birth, case {i}." for i in range(6)]
IDS = [chunk_id(t) for t in TEXTS]
RETRIEVERS = [{"name": "bm25", "kind": "bm25", "params": {"k1": 0.9}}, {"name": "dense", "kind": "dense", "params": {}}]


def chunks() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "chunk_id": IDS,
            "source": ["who-a", "who-a", "who-a", "nice-b", "nice-b", "nice-b"],
            "page": [1, 2, 3, 1, 2, 3],
            "breadcrumb": [["Labour", "Third stage"]] * 6,
            "text": TEXTS,
            "given_cid": IDS,
            "line": [1, 5, 9, 13, 17, 21],
            "ordinal": list(range(6)),
            "corpus_version": [CORPUS_VERSION] * 6,
        }
    )


def queries() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": ["q_00002", "q_00001"],  # unsorted on purpose
            "query_text": ["When is oxytocin given?", "What dose of oxytocin prevents PPH?"],
            "seed_chunk_id": [IDS[3], IDS[0]],
            "source": ["nice-b", "who-a"],
            "tier": ["high", "very_high"],
            "model": ["qwen-test"] * 2,
            "prompt_hash": [WRITER_TEMPLATE.hash] * 2,
            "temperature": [0.0, 0.0],
            "reason": ["clinical", "clinical"],
            "corpus_version": [CORPUS_VERSION] * 2,
        }
    )


def rankings() -> pl.DataFrame:
    rows = []
    for q, order in (("q_00001", [0, 1, 2, 4]), ("q_00002", [3, 5, 4, 0])):
        for retriever, ids in (("bm25", order), ("dense", list(reversed(order)))):
            for rank, i in enumerate(ids, start=1):
                rows.append((q, retriever, rank, IDS[i], 10.0 - rank))
    rows.append(("q_00001", "audit-only", 1, IDS[5], 1.0))  # not pooled: not released
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


def pooled_pairs(depth: int = 3) -> pl.DataFrame:
    r = rankings().filter(pl.col("rank") <= depth, pl.col("retriever") != "audit-only")
    return r.group_by("query_id", "chunk_id").agg(pl.col("rank").min().alias("best_rank")).sort("query_id", "chunk_id")


def judgments(pairs: pl.DataFrame | None = None) -> pl.DataFrame:
    pairs = pooled_pairs() if pairs is None else pairs
    n = pairs.height
    d1 = [i % 4 != 3 for i in range(n)]
    d2 = [(i % 3) if ok else None for i, ok in enumerate(d1)]
    d3 = [min(i % 3, d) if ok else None for i, (ok, d) in enumerate(zip(d1, d2))]
    d4 = [(i % 2) * 2 if ok else None for i, ok in enumerate(d1)]
    score = [(a + b + c) if ok else 0 for ok, a, b, c in zip(d1, d2, d3, d4)]
    return pairs.select("query_id", "chunk_id").with_columns(
        reused=pl.lit(False),
        judge_model=pl.lit("judge-test"),
        prompt_hash=pl.lit(JUDGE_HASH),
        d1_topic=pl.Series(d1),
        d2_meaningful=pl.Series(d2, dtype=pl.Int8),
        d3_actionable=pl.Series(d3, dtype=pl.Int8),
        d4_density=pl.Series(d4, dtype=pl.Int8),
        d3_answered=pl.Series(d3, dtype=pl.Int8),
        structural_violation=pl.lit(False),
        score=pl.Series(score, dtype=pl.Int8),
        reasoning=pl.Series([f"reasoning for pair {i}" for i in range(n)]),
        judge_endpoint=pl.lit("http://judge-1:8000/v1"),
        corpus_version=pl.lit(CORPUS_VERSION),
        cache_key=pl.Series([f"k{i}" for i in range(n)]),
        tier=pl.lit("high"),
    )


def gate_decisions(failed: int = 0, kept: int = 2) -> pl.DataFrame:
    """The query writer's gate decisions: ``kept`` chunks kept, ``failed`` more with a failed answer."""
    n = kept + failed
    return pl.DataFrame(
        {
            "seed_chunk_id": [f"seed{i}" for i in range(n)],
            "source": ["who-a"] * n,
            "tier": ["high"] * n,
            "status": ["kept"] * kept + ["llm_failed"] * failed,
            "model": ["qwen-test"] * n,
            "prompt_hash": [WRITER_TEMPLATE.hash] * n,
            "temperature": [0.0] * n,
            "corpus_version": [CORPUS_VERSION] * n,
        }
    )


def reliability(note: str | None = None) -> pl.DataFrame:
    """A judge_reliability table: agreement figures, or refused (values null) with ``note``."""
    metrics = ["lenient_agreement", "strict_agreement", "weighted_kappa_linear"]
    return pl.DataFrame(
        {
            "reference_stage": ["reference_judge"] * 3,
            "audit": ["self_consistency"] * 3,
            "reference_model": ["judge-test"] * 3,
            "metric": metrics,
            "value": [None] * 3 if note else [0.75, 0.5, 0.4],
            "pairs": [4] * 3,
            "note": [note] * 3,
        },
        schema_overrides={"value": pl.Float64, "note": pl.String},
    )


def inputs(**overrides) -> MamaretrievalInputs:
    base = dict(
        version="0.3.0",
        previous_version="0.2.0",
        chunks=chunks(),
        queries=queries(),
        rankings=rankings(),
        judgments=judgments(),
        pooled_pairs=pooled_pairs(),
        corpus=CorpusInfo("sample_data/corpus/chunks_for_rag.txt", None, "ab" * 32, "body"),
        query_writer=PromptInfo(
            WRITER_TEMPLATE, QueryAnswerWithReasoning.model_json_schema(), WRITER_TEMPLATE.hash, 0.0, False
        ),
        judge=PromptInfo(RELEVANCE_JUDGE, JudgeVerdictsWithReasoning.model_json_schema(), JUDGE_HASH, 0.0, False),
        retrievers=RETRIEVERS,
        pool_depth=3,
        include_seed_chunk=False,
        producer={"package": "mama_pipeline", "version": "0.1.0", "git_commit": None},
    )
    base.update(overrides)
    return MamaretrievalInputs(**base)
