"""Acceptance: BM25 reranked by a CrossEncoder on the MIRIAD sample is scored, tested against BM25 and reported
with its segment tables. The cross-encoder is all-MiniLM-L6-v2 with an untrained head: its scores are not
meaningful, only the plumbing is under test."""

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from mama_pipeline.evaluation.definitions import build_defs as build_evaluation_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded

defs = build_evaluation_defs(load_settings())

pytestmark = pytest.mark.slow
SAMPLE = Path(__file__).resolve().parents[2] / "mama_pipeline" / "sample_data" / "upstream" / "miriad_beir_sample"


def test_bm25_reranked_on_miriad_is_scored_tested_and_reported_by_segment(tmp_path, monkeypatch):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            "retrieval:\n  retrievers:\n    - {name: bm25, kind: bm25}\n"
            "    - {name: bm25-ce, kind: rerank, params: {run: bm25, depth: 10, backend: "
            "{type: cross_encoder, untrained_minilm: true, max_length: 128}}}\n"
            "evaluation:\n  resamples: 500\n  segments: {min_queries: 20}\n  beir:\n"
            f"    - {{name: miriad-sample, path: {SAMPLE}, retrievers: [bm25, bm25-ce], max_queries: 60}}\n"
        )
    )
    beir = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and dg.AssetKey("beir_scoreboard") in a.keys]
    assert dg.materialize(beir, resources=shared_resources(str(cfg))).success
    store = Store(tmp_path / "data" / "mama.duckdb")

    board = store.read_table("beir_scoreboard")
    assert set(board["retriever"]) == {"bm25", "bm25-ce"} and set(board["n_queries"]) == {60}
    sig = store.read_table("beir_significance")
    assert sig.select("retriever_a", "retriever_b").unique().rows() == [("bm25", "bm25-ce")]
    by_measure = {r["measure"]: r for r in sig.iter_rows(named=True)}
    # the reranker reorders BM25's top 10: the same chunks are in both top-10s, so hits at 10 agree exactly
    assert by_measure["Success@10"]["diff"] == 0 and by_measure["Success@10"]["p_randomization"] == 1.0
    assert by_measure["RR"]["diff"] != 0  # ... while the order within them changed
    assert store.read_table("rerank_failures").height == 0
    audits = store.read_table("beir_audits").filter(pl.col("retriever") == "bm25-ce")
    figures = dict(audits.select("figure", "value").iter_rows())
    assert figures["max_seq_length"] == 128 and figures["documents"] == 600 and figures["share_longer_than_max"] == 1.0

    segments = store.read_table("beir_segment_scoreboard")
    assert set(segments["retriever"]) == {"bm25", "bm25-ce"}
    assert set(segments["dimension"]) == {"query length", "relevant chunk length"}
    for dim in ("query length", "relevant chunk length"):
        counts = segments.filter(
            (pl.col("dimension") == dim) & (pl.col("retriever") == "bm25") & (pl.col("measure") == "RR")
        )
        assert counts["n_queries"].sum() == 60  # every query in exactly one segment
    seg_sig = store.read_table("beir_segment_significance")
    tested = segments.filter("tested").select("dimension", "segment").unique()
    assert tested.height >= 1 and seg_sig.select("dimension", "segment").unique().sort("segment").equals(
        tested.sort("segment").select("dimension", "segment")
    )
    assert (seg_sig["n_queries"] >= 20).all() and set(seg_sig["retriever_b"]) == {"bm25-ce"}

    report = tmp_path / "data" / "reports" / "beir-miriad-sample"
    html = (report / "scoreboard.html").read_text()
    assert "bm25-ce" in html and "Results by segment" in html and "By relevant chunk length" in html
    assert (report / "segments.png").stat().st_size > 1000
