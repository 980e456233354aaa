"""Each retriever's version (``retrieval_input_files``' partitions): a change moves its own and its readers' only."""

from __future__ import annotations

from pathlib import Path

from mama_pipeline.retrieval._retriever_versions import retriever_versions
from mama_pipeline.retrieval.settings import RetrievalSettings


def section(k1: float = 0.9, pool_depth: int = 10, rrf_depth: int | None = None) -> RetrievalSettings:
    return RetrievalSettings.model_validate(
        {
            "retrievers": [
                {"name": "bm25", "kind": "bm25", "params": {"k1": k1}},
                {"name": "other", "kind": "bm25", "params": {"k1": 1.5}},
                {"name": "splade", "kind": "sparse", "params": {"model_path": "models/splade"}},
                {"name": "fused", "kind": "rrf", "params": {"runs": ["bm25", "other"], "depth": rrf_depth}},
            ],
            "pool_depth": pool_depth,
            "pool_retrievers": ["bm25", "other", "splade", "fused"],
        }
    )


def test_a_changed_parameter_moves_that_retriever_and_the_fusion_reading_it(tmp_path):
    resolve = tmp_path.joinpath
    before = retriever_versions(section(), resolve)
    after = retriever_versions(section(k1=1.2), resolve)
    assert sorted(before) == ["bm25", "fused", "other", "splade"]
    assert {n for n in before if before[n] != after[n]} == {"bm25", "fused"}
    assert retriever_versions(section(), resolve) == before  # the same settings: the same versions


def test_a_deeper_read_by_the_fusion_moves_the_runs_it_reads(tmp_path):
    resolve = tmp_path.joinpath
    before = retriever_versions(section(pool_depth=10), resolve)
    after = retriever_versions(section(pool_depth=10, rrf_depth=50), resolve)  # bm25 and other now stored to 50
    assert {n for n in before if before[n] != after[n]} == {"bm25", "other", "fused"}


def test_a_changed_model_file_moves_the_retriever_that_names_it(tmp_path):
    resolve = tmp_path.joinpath
    model = Path(tmp_path, "models", "splade")
    model.mkdir(parents=True)
    (model / "weights.bin").write_bytes(b"one")
    before = retriever_versions(section(), resolve)
    (model / "weights.bin").write_bytes(b"a longer file")  # another size: a changed folder
    after = retriever_versions(section(), resolve)
    assert {n for n in before if before[n] != after[n]} == {"splade"}
