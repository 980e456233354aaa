"""A retriever ranks a slice of queries at a time: the slices, concatenated, are the one-slice ranking, and the
metadata counts are the same; a fusion reads only its slice's stored rows."""

import polars as pl
import pytest

from mama_pipeline.retrieval._registry import RetrievalEnv, ranked_slices, rankings_in
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame
from mama_pipeline_tests.retrieval.test_pooling import ranking

SETTINGS = RetrievalSettings.model_validate(
    {
        "retrievers": [
            {"name": "bm25", "kind": "bm25"},
            {"name": "a", "kind": "bm25"},
            {"name": "b", "kind": "bm25"},
            {"name": "f", "kind": "rrf", "params": {"runs": ["a", "b"]}},
        ]
    }
)


def ranked(spec_name, size, env):
    out = ranked_slices(SETTINGS.retriever(spec_name), chunks_frame(), queries_frame(), 3, env, size)
    slices = list(out.slices)
    return slices, out.metadata()


@pytest.mark.slow
def test_bm25_in_slices_of_two_ranks_as_in_one(store, tmp_path):
    env = RetrievalEnv(store, tmp_path / "work", lambda p: tmp_path / p, lambda names, ids: None, log=lambda m: None)
    one, one_meta = ranked("bm25", 100, env)
    sliced, meta = ranked("bm25", 2, env)
    assert len(one) == 1 and [s["query_id"].n_unique() for s in sliced] == [2, 2, 1]  # 5 queries
    assert pl.concat(sliced).equals(one[0])
    assert one[0]["query_id"].is_sorted()
    assert {k: v for k, v in meta.items() if k != "index_built_now"} == {
        k: v for k, v in one_meta.items() if k != "index_built_now"
    }
    per_query = one[0].group_by("query_id").len()
    assert meta["rows"] == one[0].height and meta["queries"] == 5
    assert meta["queries_without_hits"] == 5 - per_query.height
    assert meta["queries_with_fewer_than_top_k"] == per_query.filter(pl.col("len") < 3).height > 0


def test_a_fusion_reads_its_slice_and_fuses_as_one(store, tmp_path):
    ids = chunks_frame()["chunk_id"].to_list()
    stored = pl.concat(
        [
            ranking("a", {q: ids[i : i + 3] for i, q in enumerate(queries_frame()["query_id"])}),
            ranking("b", {"q_00001": [ids[2], ids[0]], "q_00005": [ids[7]]}),  # none for q_00002..q_00004
        ]
    )
    asked: list[list[str]] = []

    def load(names, query_ids):
        asked.append(list(query_ids))
        return rankings_in(stored)(names, query_ids)

    env = RetrievalEnv(store, tmp_path, lambda p: tmp_path / p, load)
    one, one_meta = ranked("f", 100, env)
    asked.clear()
    sliced, meta = ranked("f", 2, env)
    assert asked == [["q_00001", "q_00002"], ["q_00003", "q_00004"], ["q_00005"]]
    assert pl.concat(sliced).equals(one[0]) and meta == one_meta
    # q_00001: ids[0] is rank 1 of a and rank 2 of b; ids[2] rank 3 of a and rank 1 of b
    q1 = one[0].filter(pl.col("query_id") == "q_00001")
    assert dict(q1.select("chunk_id", "score").iter_rows()) == pytest.approx(
        {ids[0]: 1 / 61 + 1 / 62, ids[2]: 1 / 63 + 1 / 61, ids[1]: 1 / 62}
    )


def test_a_fusion_whose_run_has_no_stored_rows_at_all_is_refused_after_its_slices(store, tmp_path):
    only_a = ranking("a", {"q_00001": [chunks_frame()["chunk_id"][0]]})
    env = RetrievalEnv(store, tmp_path, lambda p: tmp_path / p, rankings_in(only_a))
    with pytest.raises(ValueError, match=r"^reciprocal rank fusion: no stored rankings for \['b'\]"):
        ranked("f", 2, env)
