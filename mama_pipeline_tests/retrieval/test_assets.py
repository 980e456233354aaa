"""The retrieval group materialised with Dagster, each run in a fresh process (partitions come from the config)."""

import json
import os
import subprocess
import sys

import polars as pl
import pytest
import yaml

from mama_pipeline.retrieval._pooling import audit_pool, pool_pairs, pool_stats, stratified_query_sample
from mama_pipeline.store import Store
from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame, with_query_provenance
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of


def materialise(tmp_path, config: dict | None, chunks: pl.DataFrame, queries: pl.DataFrame) -> dict:
    chunks.write_parquet(tmp_path / "chunks.parquet")
    queries.write_parquet(tmp_path / "queries.parquet")
    env = {**os.environ, "MAMA_DATA_DIR": str(tmp_path / "data"), "DAGSTER_HOME": ""}
    env.pop("DAGSTER_HOME")
    if config is not None:
        (tmp_path / "config.yaml").write_text(with_embedded(yaml.safe_dump(config)))
        env["MAMA_CONFIG"] = str(tmp_path / "config.yaml")
    else:
        env.pop("MAMA_CONFIG", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mama_pipeline_tests.retrieval.dagster_run",
            str(tmp_path / "chunks.parquet"),
            str(tmp_path / "queries.parquet"),
            str(tmp_path / "report.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads((tmp_path / "report.json").read_text())


def test_imported_runs_fusion_and_pools(tmp_path):
    chunks, queries = chunks_frame(), queries_frame()
    ids = chunks["chunk_id"].to_list()
    qids = queries["query_id"].to_list()
    (tmp_path / "a.trec").write_text(
        "".join(f"{q} Q0 {c} {i + 1} {9 - i} a\n" for q in qids for i, c in enumerate(ids[:5]))
    )
    pl.DataFrame(
        {
            "query_id": [q for q in qids for _ in ids[3:]],
            "chunk_id": ids[3:] * len(qids),
            "score": [1.0, 0.5, 0.25, 0.1, 0.05] * len(qids),
        }
    ).write_parquet(tmp_path / "b.parquet")
    config = {
        "retrieval": {
            "retrievers": [
                {"name": "a", "kind": "imported", "params": {"path": "a.trec"}},
                {"name": "b", "kind": "imported", "params": {"path": "b.parquet"}},
                {"name": "fused", "kind": "rrf", "params": {"runs": ["a", "b"]}},
            ],
            "pool_depth": 2,
            "pool_retrievers": ["a", "b"],
            "include_seed_chunk": True,
            "audit": {"n_queries": 2, "depth": 4, "seed": 3},
        }
    }
    report = materialise(tmp_path, config, chunks, queries)
    assert all(step["success"] for step in report["steps"]), report
    assert all(all(step["checks"].values()) for step in report["steps"])
    assert report["steps"][1]["checks"] == {"rankings_in_trec_eval_order": True}

    store = Store(tmp_path / "data" / "mama.duckdb")
    rankings = store.read_table("rankings")
    assert rankings.group_by("retriever").len().sort("retriever").rows() == [("a", 20), ("b", 20), ("fused", 20)]
    pool = store.read_table("pooled_pairs")
    # top-2 of a (ids 0, 1) and of b (ids 3, 4) plus the seed chunk
    for q, seed in queries.select("query_id", "seed_chunk_id").iter_rows():
        expected = {ids[0], ids[1], ids[3], ids[4], seed}
        assert set(pool.filter(pl.col("query_id") == q)["chunk_id"]) == expected
    audit = store.read_table("audit_pool")
    assert audit["query_id"].n_unique() == 2 and audit.filter(~pl.col("in_main_pool")).height > 0
    meta = report["steps"][-1]["metadata"]
    assert meta["pooled_pairs"]["pairs"] == str(pool.height)
    assert meta["audit_pool"]["sampled_queries"] == "2"
    # the pools read ranks 1..depth a slice of queries at a time: the same rows and metadata as the pools built
    # from every stored row (the whole-table path they replaced)
    whole = pool_pairs(rankings, ["a", "b"], 2, queries, include_seed=True)
    assert pool.equals(whole)
    assert {k: str(v) for k, v in pool_stats(whole, ["a", "b"], queries.height).items()}.items() <= meta[
        "pooled_pairs"
    ].items()
    audited = meta["audit_pool"]["retrievers"].split(", ")
    sample = stratified_query_sample(queries, 2, 3)
    assert audit.equals(audit_pool(rankings, audited, 4, sample, True, whole))


def test_a_pooled_reranker_is_a_rankings_partition(tmp_path, fake_llm):
    from mama_pipeline_tests.retrieval.test_rerank import fake_score

    chunks, queries = chunks_frame(), queries_frame()
    ids = chunks["chunk_id"].to_list()
    texts = dict(chunks.select("chunk_id", "text").iter_rows())
    qids = queries["query_id"].to_list()
    (tmp_path / "a.trec").write_text(
        "".join(f"{q} Q0 {c} {i + 1} {9 - i} a\n" for q in qids for i, c in enumerate(ids[:5]))
    )
    config = {
        "retrieval": {
            "retrievers": [
                {"name": "a", "kind": "imported", "params": {"path": "a.trec"}},
                {
                    "name": "rr",
                    "kind": "rerank",
                    "params": {
                        "run": "a",
                        "depth": 5,
                        "backend": {"type": "endpoint", "base_url": fake_llm.url, "model": "fake-rerank"},
                    },
                },
            ],
            "pool_depth": 2,
            "include_seed_chunk": False,
            "audit": {"n_queries": 2, "depth": 4, "seed": 3},
        }
    }
    report = materialise(tmp_path, config, chunks, queries)
    assert all(step["success"] for step in report["steps"]), report
    store = Store(tmp_path / "data" / "mama.duckdb")
    rankings = store.read_table("rankings")
    assert rankings.group_by("retriever").len().sort("retriever").rows() == [("a", 25), ("rr", 20)]
    pool = store.read_table("pooled_pairs")
    for q, text in queries.select("query_id", "query_text").iter_rows():
        reranked = sorted(ids[:5], key=lambda c: -fake_score(text, texts[c]))
        assert set(pool.filter(pl.col("query_id") == q)["chunk_id"]) == {ids[0], ids[1], *reranked[:2]}


def test_bad_imported_run_fails_the_partition_with_file_and_line(tmp_path):
    chunks, queries = chunks_frame(), queries_frame()
    (tmp_path / "a.trec").write_text(
        f"q_00001 Q0 {chunks['chunk_id'][0]} 1 1.0 a\nq_00001 Q0 nope 2 0.5 a\nq_00001 Q0 nada 3 0.4 a\n"
    )
    config = {"retrieval": {"retrievers": [{"name": "a", "kind": "imported", "params": {"path": "a.trec"}}]}}
    report = materialise(tmp_path, config, chunks, queries)
    ranking_step = report["steps"][1]
    assert not ranking_step["success"]
    line = f"{tmp_path / 'a.trec'}:line 2: unknown chunk id 'nope' (and 1 more problem)"
    assert any(m.endswith(f"Failure: {line}") for e in ranking_step["errors"] for m in e.splitlines()), ranking_step
    failure = ranking_step["failure_metadata"]  # every problem, in the failure's metadata
    assert (
        failure["problem_count"] == "2"
        and f"{tmp_path / 'a.trec'}:line 3: unknown chunk id 'nada'" in failure["problems"]
    )


@pytest.mark.slow
def test_sample_config_pools_bm25_minilm_and_splade_on_the_sample_corpus(tmp_path, sample_embeddings):
    """The demo: the bundled configuration's three offline retrievers over the sample corpus (the store starts
    holding the sample's document vectors, conftest's ``sample_embeddings``; the queries are encoded by the run)."""
    from mama_pipeline.corpus._bundle import load_bundle
    from mama_pipeline.settings import load_settings

    s = load_settings()
    chunks = load_bundle(s.resolve(s.corpus.bundle)).chunks
    seeds = chunks.sort("chunk_id").gather_every(20)
    queries = with_query_provenance(
        seeds.select(
            query_id=pl.format("q_{}", pl.int_range(1, pl.len() + 1).cast(pl.String).str.zfill(5)),
            query_text=pl.col("text").str.split(" ").list.head(12).list.join(" "),
            seed_chunk_id="chunk_id",
            source="source",
            tier=pl.lit("high"),
        ),
        chunks["corpus_version"][0],
    )
    with_embeddings_of(sample_embeddings, tmp_path / "data" / "mama.duckdb")
    report = materialise(tmp_path, None, chunks, queries)
    assert all(step["success"] for step in report["steps"]), report
    pool = Store(tmp_path / "data" / "mama.duckdb").read_table("pooled_pairs")
    contributors = set(pool["retrievers"].explode().drop_nulls())
    assert contributors == {"bm25", "minilm", "splade-tiny"}
    assert pool["query_id"].n_unique() == queries.height
    assert pool.filter(pl.col("is_seed") & (pl.col("retrievers").list.len() > 0)).height >= queries.height * 0.8
