"""Which retrievers rank the variants and in what order: a fusion or reranker after the runs it reads, a
missing run refused in one line, and a reranker listed before its base run ranking the variants for real."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.retrieval._registry import RetrievalEnv
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.robustness._variant_rankings import rank_variants, retriever_order
from mama_pipeline.store import Store
from mama_pipeline_tests.retrieval.fixtures import chunks_frame

CE = {"type": "cross_encoder", "untrained_minilm": True, "max_length": 128}


def registry(*retrievers: dict) -> RetrievalSettings:
    return RetrievalSettings.model_validate({"retrievers": list(retrievers), "pool_depth": 3, "audit": {"depth": 3}})


BM25 = {"name": "bm25", "kind": "bm25"}
PLAIN = {"name": "plain", "kind": "bm25", "params": {"stemmer": "none"}}
RERANK = {"name": "bm25-ce", "kind": "rerank", "params": {"run": "bm25", "depth": 4, "backend": CE}}


def test_a_reranker_or_fusion_listed_before_its_runs_is_ranked_after_them():
    r = registry(RERANK, {"name": "fused", "kind": "rrf", "params": {"runs": ["bm25-ce", "plain"]}}, PLAIN, BM25)
    order, skipped = retriever_order(r, [])
    assert order == ["plain", "bm25", "bm25-ce", "fused"] and skipped == []


@pytest.mark.parametrize(
    "chosen, imported, message",
    [
        (
            ["bm25-ce"],
            False,
            "robustness: rerank retriever 'bm25-ce' needs variant rankings of ['bm25']; "
            "add them to robustness.retrievers",
        ),
        (
            [],
            True,
            "robustness: rerank retriever 'bm25-ce' needs variant rankings of ['bm25']; imported runs cannot "
            "rank variants: leave 'bm25-ce' out of robustness.retrievers",
        ),
    ],
)
def test_a_reranker_whose_base_run_is_not_ranked_is_refused_in_one_line(chosen, imported, message):
    base = {"name": "bm25", "kind": "imported", "params": {"path": "run.trec"}} if imported else BM25
    with pytest.raises(ValueError) as err:
        retriever_order(registry(RERANK, base), chosen)
    assert str(err.value) == message


def test_a_fusion_and_a_reranker_reading_each_other_are_refused():
    r = registry(
        BM25,
        {"name": "fused", "kind": "rrf", "params": {"runs": ["bm25", "ce"]}},
        {"name": "ce", "kind": "rerank", "params": {"run": "fused", "depth": 4, "backend": CE}},
    )
    with pytest.raises(ValueError, match=r"^robustness: retrievers \['fused', 'ce'\] read each other's rankings"):
        retriever_order(r, [])


@pytest.mark.slow
def test_a_reranker_listed_first_reranks_the_variant_ranking_of_its_base(tmp_path):
    r = registry(RERANK, BM25)
    chunks = chunks_frame()
    variants = pl.DataFrame(
        {
            "variant_id": ["q_00001~typo", "q_00002~typo"],
            "parent_id": ["q_00001", "q_00002"],
            "query_text": ["oxytocn dose to prevent bleding after birth", "anaemia in pregnncy after birth"],
        }
    )
    parts: list[tuple[str, pl.DataFrame]] = []
    meta = rank_variants(
        r,
        [],
        chunks,
        variants,
        lambda load: RetrievalEnv(Store(tmp_path / "mama.duckdb"), tmp_path / "work", lambda p: p, load),
        lambda rankings, name: parts.append((name, rankings)),
        log=lambda _m: None,
        size=1,
    )
    # one variant a slice: each slice's base ranking comes before its reranking
    assert [name for name, _ in parts] == ["bm25", "bm25-ce"] * 2
    assert meta["bm25-ce/rows"] == sum(p.height for name, p in parts if name == "bm25-ce") > 0
    by = {name: pl.concat([p for n, p in parts if n == name]) for name in ("bm25", "bm25-ce")}
    for variant_id in variants["variant_id"]:
        base = by["bm25"].filter((pl.col("query_id") == variant_id) & (pl.col("rank") <= 4))["chunk_id"].to_list()
        reranked = by["bm25-ce"].filter(pl.col("query_id") == variant_id)["chunk_id"].to_list()
        # its top 3 (the pool and audit depth) come from the base's variant top 4 (params.depth)
        assert len(base) == 4 and len(reranked) == 3 and set(reranked) <= set(base)
