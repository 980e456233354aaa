"""Which retrievers rank the variants and in what order: a fusion or reranker after the runs it reads, a
missing run refused in one line, a partition that ranks nothing says why, and a reranker's partition reranking
its base run's stored variant rankings for real."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.retrieval._registry import RetrievalEnv
from mama_pipeline.retrieval._stored_rankings import StoredRankings
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline.robustness._variant_rankings import rank_variants, retriever_order, runs_unranked, unranked_reason
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


def test_a_retriever_left_out_or_ranking_no_free_text_ranks_no_variant_and_says_why():
    imported = {"name": "run", "kind": "imported", "params": {"path": "run.trec"}}
    r = registry(BM25, PLAIN, imported)
    assert unranked_reason(r, [], "bm25") is None
    assert unranked_reason(r, ["bm25"], "plain") == "not in robustness.retrievers"
    assert (
        unranked_reason(r, [], "run") == "its kind (imported) ranks no free text: its run holds the clean queries only"
    )
    with pytest.raises(
        ValueError, match=r"^robustness: rerank retriever 'bm25-ce' needs variant rankings of \['bm25'\]"
    ):
        unranked_reason(registry(RERANK, BM25), ["bm25-ce"], "bm25")  # the choice is checked in every partition


VARIANTS = pl.DataFrame(
    {
        "variant_id": ["q_00001~typo", "q_00002~typo"],
        "parent_id": ["q_00001", "q_00002"],
        "query_text": ["oxytocn dose to prevent bleding after birth", "anaemia in pregnncy after birth"],
    }
)


def stored_variant_rankings(tmp_path, rows: dict[str, list[tuple[str, str]]]) -> Store:
    """A store whose variant_rankings partitions hold ``rows`` (retriever -> (variant id, chunk id), ranked in
    order)."""
    store = Store(tmp_path / "mama.duckdb")
    for name, pairs in rows.items():
        frame = pl.DataFrame(
            {
                "query_id": [q for q, _ in pairs],
                "retriever": name,
                "rank": list(range(1, len(pairs) + 1)),
                "chunk_id": [c for _, c in pairs],
                "score": [float(len(pairs) - i) for i in range(len(pairs))],
            },
            schema_overrides={"rank": pl.Int32},
        )
        store.write_table("variant_rankings", frame, partition=name)
    return store


def test_a_fusion_partition_reads_its_runs_partitions_and_refuses_one_never_materialised(tmp_path):
    r = registry(BM25, PLAIN, {"name": "fused", "kind": "rrf", "params": {"runs": ["bm25", "plain"]}})
    chunks = chunks_frame()
    c = chunks["chunk_id"].to_list()
    store = stored_variant_rankings(tmp_path, {"bm25": [("q_00001~typo", c[0])], "plain": []})
    stored = StoredRankings(store, ["bm25", "plain"], "variant_rankings")
    with pytest.raises(ValueError) as err:
        runs_unranked(r, "fused", stored, {"bm25", "fused"}, chunks, VARIANTS)
    assert str(err.value) == (
        "robustness: rrf retriever 'fused' reads the variant rankings of ['plain'], never materialised; "
        "materialise those variant_rankings partitions first"
    )
    assert runs_unranked(r, "fused", stored, {"bm25", "plain"}, chunks, VARIANTS) is None
    # a stored rank of a variant no longer made is refused in one line, as rankings refuses a run's stale rows
    with pytest.raises(ValueError) as err:
        runs_unranked(r, "fused", stored, {"bm25", "plain"}, chunks, VARIANTS.tail(1))
    assert str(err.value) == (
        "variant_rankings of ['bm25'] name 1 query_id(s) missing from the current queries table "
        "(e.g. 'q_00001~typo'); re-materialise those variant_rankings partitions"
    )
    nothing = StoredRankings(
        stored_variant_rankings(tmp_path / "empty", {"bm25": [], "plain": []}), ["bm25", "plain"], "variant_rankings"
    )
    assert runs_unranked(r, "fused", nothing, {"bm25", "plain"}, chunks, VARIANTS) == "its runs ranked no variant"


@pytest.mark.slow
def test_a_reranker_partition_reranks_the_stored_variant_ranking_of_its_base(tmp_path):
    r = registry(RERANK, BM25)
    chunks = chunks_frame()
    store = Store(tmp_path / "mama.duckdb")
    reads: list[tuple[list[str], list[str]]] = []

    def env() -> RetrievalEnv:
        def stored(names: list[str], ids: list[str]) -> pl.DataFrame:
            reads.append((names, ids))
            return store.read_table("variant_rankings", partitions=names, where={"query_id": ids})

        return RetrievalEnv(store, tmp_path / "work", lambda p: p, stored)

    by: dict[str, pl.DataFrame] = {}
    for name in ("bm25", "bm25-ce"):  # the base's partition first, as the run planner runs the listed order
        parts: list[pl.DataFrame] = []
        meta = rank_variants(r, name, chunks, VARIANTS, env(), parts.append, log=lambda _m: None, size=1)
        assert len(parts) == 2 and meta["retriever"] == name and meta["rows"] == sum(p.height for p in parts)
        by[name] = pl.concat(parts)
        store.write_table("variant_rankings", by[name], partition=name)
    # the reranker read its base's stored variant rankings one variant (a slice) at a time
    assert reads == [(["bm25"], ["q_00001~typo"]), (["bm25"], ["q_00002~typo"])]
    for variant_id in VARIANTS["variant_id"]:
        base = by["bm25"].filter((pl.col("query_id") == variant_id) & (pl.col("rank") <= 4))["chunk_id"].to_list()
        reranked = by["bm25-ce"].filter(pl.col("query_id") == variant_id)["chunk_id"].to_list()
        # its top 3 (the pool and audit depth) come from the base's variant top 4 (params.depth)
        assert len(base) == 4 and len(reranked) == 3 and set(reranked) <= set(base)
