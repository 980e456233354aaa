"""The MIRIAD sample end to end: BM25 (pyserini) and MiniLM (sentence-transformers) through the retrieval registry.

The store starts holding the sample's document vectors (conftest's ``sample_embeddings``); the queries are encoded
by the run."""

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from mama_pipeline.evaluation.definitions import build_defs as build_evaluation_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of

defs = build_evaluation_defs(load_settings())

pytestmark = pytest.mark.slow
SAMPLE = Path(__file__).resolve().parents[2] / "mama_pipeline" / "sample_data" / "upstream" / "miriad_beir_sample"


def test_miriad_sample_evaluates_bm25_and_minilm(tmp_path, monkeypatch, sample_embeddings):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            "retrieval:\n  retrievers:\n    - {name: bm25, kind: bm25}\n    - {name: minilm, kind: dense}\n"
            "evaluation:\n  resamples: 1000\n  beir:\n"
            f"    - {{name: miriad-sample, path: {SAMPLE}, retrievers: [bm25, minilm], max_queries: 300}}\n"
        )
    )
    with_embeddings_of(sample_embeddings, tmp_path / "data" / "mama.duckdb")
    beir = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and dg.AssetKey("beir_scoreboard") in a.keys]
    result = dg.materialize(beir, resources=shared_resources(str(cfg)))
    assert result.success
    store = Store(tmp_path / "data" / "mama.duckdb")
    board = store.read_table("beir_scoreboard")
    ndcg = dict(board.filter(pl.col("measure") == "nDCG@10").select("retriever", "mean").iter_rows())
    assert set(board["n_queries"]) == {300}
    # each query's own passage is among 200: both retrievers find it almost always
    assert ndcg["bm25"] > 0.9 and 0.75 < ndcg["minilm"] < ndcg["bm25"]
    sig = store.read_table("beir_significance")
    assert sig.select("measure").to_series().to_list() == ["Success@10", "RR", "nDCG@10"]
    assert sig.filter(pl.col("measure") == "Success@10")["p_mcnemar"].null_count() == 0
    audits = {
        (a, r, f): v
        for a, r, f, v in store.read_table("beir_audits").select("audit", "retriever", "figure", "value").iter_rows()
    }
    assert audits[("leak", None, "leaked_any")] == 0 and audits[("leak", None, "queries_with_gold")] == 300
    # MIRIAD passages average ~1,000 MiniLM tokens: every one exceeds its 256-token limit
    assert audits[("truncation", "minilm", "max_seq_length")] == 256
    assert audits[("truncation", "minilm", "share_longer_than_max")] == 1.0
    per_query = tmp_path / "data" / "results" / "per_query" / "beir-miriad-sample"
    manifest = json.loads((per_query / "manifest.json").read_text())
    assert manifest["files"] == {"bm25": "bm25.perquery.tsv", "minilm": "minilm.perquery.tsv"}
    assert manifest["run_files"] == {"bm25": "bm25.run", "minilm": "minilm.run"}
    first = pl.read_csv(per_query / "bm25.first_relevant.tsv", separator="\t", schema_overrides={"query_id": pl.String})
    rr = pl.read_csv(per_query / "bm25.perquery.tsv", separator="\t", schema_overrides={"query_id": pl.String})
    assert first["query_id"].to_list() == rr["query_id"].to_list() and first.height == 300
    # the first relevant rank is what reciprocal rank measures: RR = 1 / rank (0 when none was found)
    joined = first.join(rr.select("query_id", "RR"), on="query_id")
    assert joined.select(((1 / pl.col("first_relevant_rank")).fill_null(0) - pl.col("RR")).abs().max()).item() < 1e-9
    assert (tmp_path / "data" / "reports" / "beir-miriad-sample" / "scoreboard.html").exists()
