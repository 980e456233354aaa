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


def pooled(pool_retrievers: list[str], extra: list[dict] | None = None) -> RetrievalSettings:
    """bm25 pooled and audited to 30, splade pooled to 10 or not at all, ``extra`` retrievers in neither."""
    return RetrievalSettings.model_validate(
        {
            "retrievers": [
                {"name": "bm25", "kind": "bm25", "params": {"k1": 0.9}},
                {"name": "splade", "kind": "sparse", "params": {"model_path": "models/splade"}},
                *(extra or []),
            ],
            "pool_depth": 10,
            "pool_retrievers": pool_retrievers,
            "audit": {"depth": 30, "retrievers": ["bm25"]},
        }
    )


def test_the_pool_settings_move_the_retrievers_whose_depth_they_change_only(tmp_path):
    """The pools' settings are in no ``rankings`` code version (``retrieval.pool_depth@observed``): what they change
    of a ranking, its depth, is in its retriever's version."""
    resolve = tmp_path.joinpath
    before = retriever_versions(pooled(["bm25", "splade"]), resolve)
    deeper = pooled(["bm25", "splade"]).model_copy(update={"pool_depth": 20})
    assert (deeper.depth_of("bm25"), deeper.depth_of("splade")) == (30, 20)
    after = retriever_versions(deeper, resolve)
    assert {n for n in before if before[n] != after[n]} == {"splade"}  # bm25's depth is the audit's 30 either way


def test_a_retriever_added_leaves_the_others_and_their_rankings_code_version(tmp_path):
    import mama_pipeline.retrieval.assets as retrieval_assets
    from mama_pipeline.common import code_version as cv

    resolve = tmp_path.joinpath
    old = pooled(["bm25", "splade"])
    new = pooled(["bm25", "splade"], [{"name": "bm25_k12", "kind": "bm25", "params": {"k1": 1.2}}])
    before, after = retriever_versions(old, resolve), retriever_versions(new, resolve)
    assert sorted(after) == ["bm25", "bm25_k12", "splade"]
    assert {n: after[n] for n in before} == before
    paths = cv.declared_settings(retrieval_assets, "rankings")
    assert {cv.read_path(p) for p in paths} >= {"retrieval.retrievers", "retrieval.pool_depth"}

    def version(section: RetrievalSettings) -> str:
        values = cv.settings_values({"retrieval": section.model_dump()}, paths)
        return cv.asset_code_version(retrieval_assets.__name__, "rankings", ["rankings"], values)

    assert version(old) == version(new)
    deeper = old.model_copy(update={"pool_depth": 20})  # splade's depth: its partition's version moves, not this
    assert version(old) == version(deeper)
    assert retriever_versions(deeper, resolve)["splade"] != before["splade"]


def test_the_pools_code_versions_count_the_effective_lists_not_how_they_are_written():
    """``retrieval.pooled`` and ``retrieval.audited`` are in the settings' dump: every retriever pooled whether the
    list is empty or names them all, and a retriever added outside an explicit list leaves it as it was."""
    import mama_pipeline.retrieval.assets as retrieval_assets
    from mama_pipeline.common import code_version as cv

    def values(section: RetrievalSettings, asset: str) -> dict:
        return cv.settings_values({"retrieval": section.model_dump()}, cv.declared_settings(retrieval_assets, asset))

    implicit = RetrievalSettings.model_validate(
        {"retrievers": [{"name": "bm25", "kind": "bm25"}, {"name": "other", "kind": "bm25"}]}
    )
    explicit = implicit.model_copy(update={"pool_retrievers": ["bm25", "other"]})
    assert explicit.pool_retrievers != implicit.pool_retrievers
    assert values(implicit, "pooled_pairs") == values(explicit, "pooled_pairs")
    assert values(implicit, "pooled_pairs")["retrieval.pooled"] == ["bm25", "other"]
    added = RetrievalSettings.model_validate(
        {
            "retrievers": [{"name": n, "kind": "bm25"} for n in ("bm25", "other", "new")],
            "pool_retrievers": ["bm25", "other"],
            "audit": {"retrievers": ["bm25", "other"]},
        }
    )
    for asset in ("pooled_pairs", "audit_pool"):
        assert values(added, asset) == values(implicit, asset), asset
    assert values(added.model_copy(update={"pool_retrievers": []}), "pooled_pairs") != values(implicit, "pooled_pairs")
