"""The multipassage group materialised with Dagster on the bundled sample corpus, against the fake server.

Runs in a fresh process (retriever partitions come from the configuration at import), with two
MiniLM retrievers and their RRF fusion, so the whole track (candidates through release) runs offline. The store
starts holding the sample's document vectors (conftest's ``sample_embeddings``); the queries are encoded by the run.
"""

import json
import os
import subprocess
import sys

import polars as pl
import pytest
import yaml

from mama_pipeline.release._verify import verify_release
from mama_pipeline.settings import SAMPLE_CONFIG
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of

SAMPLE_BUNDLE = SAMPLE_CONFIG.parent / "sample_data" / "corpus" / "chunks_for_rag.txt"


def config(tmp_path, url: str) -> dict:
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    raw["data_dir"] = str(tmp_path / "data")
    raw["corpus"]["bundle"] = str(SAMPLE_BUNDLE)
    for stage in ("query_writer", "judge"):
        raw["llm"][stage] = {"base_urls": [url], "model": "fake-model", "backoff_base_s": 0.01, "reasoning": "server"}
    raw["retrieval"] = {
        "retrievers": [
            {"name": "minilm", "kind": "dense"},
            {"name": "minilm-q", "kind": "dense", "params": {"query_prompt": "question: "}},
            {"name": "fused", "kind": "rrf", "params": {"runs": ["minilm", "minilm-q"]}},
        ],
        "pool_depth": 3,
    }
    raw["evaluation"]["beir"] = []
    raw["robustness"]["release"] = False  # the release carries the multipassage configuration only
    raw.pop("systems", None)  # the sample's RAG system names bm25, which this track's retrievers leave out
    raw["evaluation"]["cutoffs"] = [1, 5, 10]
    raw["evaluation"]["significance_measures"] = ["Success(rel=3)@5"]
    raw["evaluation"]["headline_measure"] = "Success(rel=3)@5"
    raw["evaluation"]["resamples"] = 200
    raw["multipassage"].update(
        sets_per_source={t: 4 for t in raw["corpus"]["tiers"]},
        pool_depth=3,
        min_similarity=0.3,
        significance_measures=["alpha_nDCG@10", "AllIn@10[pieces]"],
    )
    return raw


def materialise(tmp_path, cfg: dict, rounds: int) -> dict:
    (tmp_path / "config.yaml").write_text(with_embedded(yaml.safe_dump(cfg)))
    env = {**os.environ, "MAMA_CONFIG": str(tmp_path / "config.yaml")}
    env.pop("DAGSTER_HOME", None)
    env.pop("MAMA_DATA_DIR", None)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mama_pipeline_tests.multipassage.dagster_run",
            str(tmp_path / "report.json"),
            str(rounds),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads((tmp_path / "report.json").read_text())


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_track_end_to_end_and_rerun_asks_nothing(tmp_path, fake_llm, sample_embeddings):
    cfg = config(tmp_path, fake_llm.url)
    with_embeddings_of(sample_embeddings, tmp_path / "data" / "mama.duckdb")
    first = materialise(tmp_path, cfg, rounds=1)["steps"]
    assert all(s["success"] for s in first), [s.get("errors") for s in first if not s["success"]]
    checks = {k: v for s in first for k, v in s["checks"].items()}
    assert checks["candidates_are_well_formed"] and checks["only_verified_questions"]
    assert checks["pieces_pooled_and_labelled"] and checks["scoreboard_covers_every_question"]
    assert checks["relevance_failures_under_bound"] and checks["fact_failures_under_bound"]
    assert checks["mamaretrieval_release_verifies"]

    db = Store(tmp_path / "data" / "mama.duckdb")
    candidates = db.read_table("multipassage_candidates")
    decisions = db.read_table("multipassage_decisions")
    questions = db.read_table("multipassage_questions")
    assert set(candidates["kind"].unique()) == {"section", "cross_source"}
    assert decisions.height == candidates.filter(pl.col("status") == "sampled").height
    statuses = set(decisions["status"].to_list())
    assert "kept" in statuses and statuses & {"single_chunk_answers", "set_incomplete"}
    # only verified questions are released, each with its set's chunks in the pool
    kept = decisions.filter(pl.col("status") == "kept")
    assert sorted(questions["set_id"].to_list()) == sorted(kept["set_id"].to_list())
    assert questions["query_id"].to_list()[0] == "mq_00001"
    labels = db.read_table("multipassage_labels")
    pieces = questions.select("query_id", pl.col("chunk_ids").alias("chunk_id")).explode("chunk_id")
    assert pieces.join(labels.filter(pl.col("required_piece")), on=["query_id", "chunk_id"], how="anti").is_empty()
    # each kept question carries its facts, each verified against the chunk of the set it came from
    assert all(
        len(f) >= 2 and set(c) == set(ids)
        for f, c, ids in questions.select("facts", "fact_chunk_ids", "chunk_ids").iter_rows()
    )
    fact_labels = db.read_table("multipassage_fact_labels")
    assert (
        fact_labels.select("query_id", "chunk_id")
        .sort("query_id", "chunk_id")
        .equals(labels.select("query_id", "chunk_id").sort("query_id", "chunk_id"))
    )  # every pooled pair, once
    n_facts = dict(questions.select("query_id", pl.col("facts").list.len()).iter_rows())
    assert all(1 <= f <= n_facts[q] for q, fs in fact_labels.select("query_id", "facts").iter_rows() for f in fs or [])
    rankings = db.read_table("multipassage_rankings")
    assert set(rankings["retriever"].unique()) == {"minilm", "minilm-q", "fused"}
    board = db.read_table("multipassage_scoreboard")
    assert set(board.filter(pl.col("tier") == "all")["n_queries"].to_list()) == {questions.height}
    assert {"alpha_nDCG@10", "AllIn@10[pieces]", "R@10[pieces]", "Success(rel=3)@5"} <= set(board["measure"])
    sig = db.read_table("multipassage_significance")
    assert sig.filter(pl.col("tier") == "all").height == 2 * 3  # two measures x three pairs

    page = tmp_path / "data" / "reports" / "multipassage" / "index.html"
    assert "AllIn@10[pieces]" in page.read_text()
    releases = tmp_path / "data" / "releases"
    assert sorted(p.name for p in releases.iterdir()) == ["mamaretrieval"]  # no separate folder for the track
    folder = releases / "mamaretrieval" / "0.0.0-sample"
    assert verify_release(folder).ok
    released = pl.read_parquet(folder / "multipassage" / "questions.parquet")
    assert released["query_id"].to_list() == questions.sort("query_id")["query_id"].to_list()
    audit = pl.read_parquet(folder / "multipassage" / "decisions.parquet")
    assert audit.filter(pl.col("status") != "kept")["question"].null_count() == audit.height - kept.height
    manifest = json.loads((folder / "manifest.json").read_text())
    section = manifest["configurations"]["multipassage"]
    assert section["figures"]["not_released"] == decisions.height - questions.height
    listed = {rel for rel in manifest["files"] if rel.startswith("multipassage/")}
    on_disk = {str(p.relative_to(folder)) for p in (folder / "multipassage").rglob("*") if p.is_file()}
    assert listed == on_disk and "multipassage/facts.diversity.txt" in listed  # the manifest covers every file
    released = pl.read_parquet(folder / "multipassage" / "questions.parquet")
    assert released["facts"].to_list() == questions.sort("query_id")["facts"].to_list()
    card = (folder / "README.md").read_text()
    assert "## Multi-passage configuration" in card and "config_name: multipassage_questions" in card

    # a second run reuses every cached answer and stored label: no new LLM calls, identical release bytes
    calls = fake_llm.stats()["chat_calls"]
    second = materialise(tmp_path, cfg, rounds=1)["steps"]
    assert all(s["success"] for s in second)
    assert fake_llm.stats()["chat_calls"] == calls
    meta = {k: v for s in second for k, v in s["metadata"].items()}
    for asset, calls in (
        (
            "multipassage_decisions",
            ["write size 2:query_writer", "write size 3:query_writer", "verify:judge", "check 1 facts:judge"],
        ),
        (
            "multipassage_fact_labels",
            [k[: -len("/requests")] for k in meta["multipassage_fact_labels"] if k.endswith("/requests")],
        ),
    ):
        assert calls  # every client call of the step was served from the cache
        assert all(meta[asset][f"{c}/cache_hits"] == meta[asset][f"{c}/requests"] for c in calls)
    assert meta["multipassage_labels"]["new_labels"] == "0"
    assert json.loads((folder / "manifest.json").read_text())["files"] == manifest["files"]
