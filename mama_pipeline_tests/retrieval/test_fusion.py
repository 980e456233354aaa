"""Reciprocal rank fusion through pyserini's implementation, and its wiring in the registry."""

import subprocess
import sys

import polars as pl
import pytest

from mama_pipeline.retrieval._fusion import rrf_hits
from mama_pipeline.retrieval._registry import RetrievalEnv, rankings_in, run_retriever
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame
from mama_pipeline_tests.retrieval.test_pooling import ranking


def test_rrf_scores_are_sums_of_reciprocal_ranks():
    stored = pl.concat([ranking("a", {"q1": ["x", "y", "z"]}), ranking("b", {"q1": ["y", "w"]})])
    fused = dict(rrf_hits(stored, ["a", "b"], rrf_k=60, depth=None).select("chunk_id", "score").iter_rows())
    assert fused == pytest.approx({"x": 1 / 61, "y": 1 / 62 + 1 / 61, "z": 1 / 63, "w": 1 / 62})
    shallow = rrf_hits(stored, ["a", "b"], rrf_k=60, depth=1)
    assert sorted(shallow["chunk_id"]) == ["x", "y"]


def test_a_run_without_rows_adds_nothing_to_the_fusion():
    fused = rrf_hits(ranking("a", {"q1": ["x", "y"]}), ["a", "b"], 60, None)
    assert dict(fused.select("chunk_id", "score").iter_rows()) == pytest.approx({"x": 1 / 61, "y": 1 / 62})
    assert rrf_hits(ranking("a", {}), ["a", "b"], 60, None).is_empty()


def test_fusion_does_not_start_the_jvm():
    code = (
        "import sys; from mama_pipeline.retrieval._fusion import rrf_hits; import pyserini.fusion; "
        "print('jnius' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_registry_fuses_imported_runs(store, tmp_path):
    chunks, queries = chunks_frame(), queries_frame()
    ids = chunks["chunk_id"].to_list()
    (tmp_path / "a.trec").write_text("".join(f"q_00001 Q0 {c} {i + 1} {10 - i} a\n" for i, c in enumerate(ids[:4])))
    (tmp_path / "b.trec").write_text("".join(f"q_00001 Q0 {c} {i + 1} {5 - i} b\n" for i, c in enumerate(ids[3::-1])))
    settings = RetrievalSettings.model_validate(
        {
            "retrievers": [
                {"name": "a", "kind": "imported", "params": {"path": "a.trec"}},
                {"name": "b", "kind": "imported", "params": {"path": "b.trec"}},
                {"name": "f", "kind": "rrf", "params": {"runs": ["a", "b"]}},
            ],
            "pool_depth": 3,
            "audit": {"depth": 3},
        }
    )
    stored: list[pl.DataFrame] = []
    env = RetrievalEnv(
        store,
        tmp_path / "work",
        lambda p: tmp_path / p,
        lambda names, ids: rankings_in(pl.concat(stored))(names, ids),
    )
    outs = {}
    for spec in settings.retrievers:
        outs[spec.name] = run_retriever(spec, chunks, queries, settings.depth_of(spec.name), env)
        stored.append(outs[spec.name].rankings)
    assert outs["a"].metadata["rows_beyond_top_k_cut"] == 1 and outs["a"].rankings.height == 3
    assert outs["a"].metadata["queries_without_hits"] == 4
    # stored top-3: a = ids 0,1,2; b = ids 3,2,1. ids 1 and 2 tie (1/62 + 1/63), ids 0 and 3 tie (1/61):
    # ties go to the larger chunk id
    fused = outs["f"].rankings
    expected = sorted([ids[1], ids[2]], reverse=True) + [max(ids[0], ids[3])]
    assert fused["chunk_id"].to_list() == expected
    assert fused["score"].to_list() == pytest.approx([1 / 62 + 1 / 63] * 2 + [1 / 61])


def test_fusion_refuses_stale_stored_rankings(store, tmp_path):
    chunks, queries = chunks_frame(), queries_frame()
    stale = pl.concat([ranking("a", {"q_00001": ["gone-chunk"]}), ranking("b", {"q_00001": [chunks["chunk_id"][0]]})])
    spec = RetrievalSettings.model_validate(
        {
            "retrievers": [
                {"name": "a", "kind": "bm25"},
                {"name": "b", "kind": "bm25"},
                {"name": "f", "kind": "rrf", "params": {"runs": ["a", "b"]}},
            ]
        }
    ).retriever("f")
    env = RetrievalEnv(store, tmp_path, lambda p: tmp_path / p, lambda names, ids: stale)
    with pytest.raises(ValueError, match=r"stored rankings of \['a'\] name 1 chunk_id\(s\) missing from the corpus v1"):
        run_retriever(spec, chunks, queries, 3, env)
