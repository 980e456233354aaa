"""Per-query files and the HTML report: pairable, deterministic, complete."""

import json

import polars as pl
import pytest

from mama_pipeline.evaluation._per_query_files import read_per_query_file, write_per_query_files
from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard
from mama_pipeline.evaluation._retrieval_page import ReportInputs, label_mix, write_report
from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan
from mama_pipeline.evaluation._significance import pairwise_significance


@pytest.fixture
def evaluated():
    run = pl.DataFrame(
        {
            "retriever": ["a"] * 4 + ["b"] * 3,
            "query_id": ["q2", "q2", "q1", "q1", "q1", "q2", "q3"],
            "doc_id": ["x", "y", "z", "y", "z", "x", "w"],
            "rank": [1, 2, 1, 2, 1, 1, 1],
        }
    )
    qrels = pl.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q3"], "doc_id": ["z", "y", "x", "w"], "relevance": [6, 2, 4, 5]}
    )
    tiers = pl.DataFrame({"query_id": ["q1", "q2", "q3"], "tier": ["high", "low", "high"]})
    ev = evaluate(run, qrels, ["q1", "q2", "q3"], mamaretrieval_plan([1, 3], 3, 5), ["a", "b"])
    board = scoreboard(ev, qrels, tiers)
    sig = pairwise_significance(
        ev.per_query, ["Success(rel=3)@1", "nDCG@3"], ["a", "b"], n_resamples=200, binary_measures={"Success(rel=3)@1"}
    )
    return run, qrels, ev, board, sig


def test_per_query_files_pair_by_query_id(tmp_path, evaluated):
    _, _, ev, _, _ = evaluated
    folder = write_per_query_files(ev.per_query, ev.retrievers, ev.measures, ev.query_ids, tmp_path / "pq", "demo")
    a, b = read_per_query_file(folder / "a.perquery.tsv"), read_per_query_file(folder / "b.perquery.tsv")
    assert a["query_id"].to_list() == b["query_id"].to_list() == ["q1", "q2", "q3"]
    assert a.columns == ["query_id", *[m.name for m in ev.measures]]
    assert a.filter(pl.col("query_id") == "q3")["Success(rel=3)@1"].item() == 0.0  # a returned nothing for q3
    assert b.filter(pl.col("query_id") == "q3")["Success(rel=3)@1"].item() == 1.0
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["files"] == {"a": "a.perquery.tsv", "b": "b.perquery.tsv"} and manifest["queries"] == 3
    with pytest.raises(ValueError, match="cannot be a file name"):
        write_per_query_files(ev.per_query, ["../x"], ev.measures, ev.query_ids, tmp_path / "bad", "demo")


def test_report_is_complete_and_byte_identical_when_rebuilt(tmp_path, evaluated):
    run, qrels, _, board, sig = evaluated
    inputs = ReportInputs(
        title="demo",
        board=board,
        significance=sig,
        headline="Success(rel=3)@1",
        label_counts=qrels.group_by("relevance").agg(pl.len().alias("count")),
        label_mix=label_mix(run, qrels, 3),
        mix_k=3,
    )
    first = write_report(inputs, tmp_path / "r1")
    second = write_report(inputs, tmp_path / "r2")
    names = sorted(p.name for p in first.parent.iterdir())
    figures = ["metric_by_k", "per_tier", "score_distribution", "significance_heatmap"]
    tables = ["per_tier", "scoreboard_all_measures", "significance_hr_1_lenient", "significance_ndcg_3"]
    assert names == sorted(
        [f"{f}.{ext}" for f in figures for ext in ("pdf", "png", "svg")]
        + [f"{t}.{ext}" for t in tables for ext in ("csv", "tex")]
        + ["scoreboard.html"]
    )  # and each byte-identical on a rebuild, the SVG, PDF and LaTeX files too
    for name in names:
        assert (first.parent / name).read_bytes() == (second.parent / name).read_bytes(), name
    html = first.read_text()
    assert "HR@1 lenient by tier" in html and "nDCG@3" in html and "Queries without any qualifying document" in html
    write_report(inputs, tmp_path / "r1")  # rebuilding replaces the folder in place
    assert sorted(p.name for p in first.parent.iterdir()) == names


def test_label_mix_shares(evaluated):
    run, qrels, *_ = evaluated
    mix = label_mix(run, qrels, 2)
    a = dict(mix.filter(pl.col("retriever") == "a").select("label", "share").iter_rows())
    assert a == {"2": 0.25, "4": 0.25, "6": 0.25, "unjudged": 0.25}
