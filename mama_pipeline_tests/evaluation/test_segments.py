"""Segment breakdowns: bands, relevant-chunk length, query counts, per-segment tests, report section."""

import numpy as np
import polars as pl
import pytest

from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard
from mama_pipeline.evaluation._retrieval_page import ReportInputs, write_report
from mama_pipeline.evaluation._scoreboard_measures import beir_plan
from mama_pipeline.evaluation._segment_section import interval_bars
from mama_pipeline.evaluation._segments import band_labels, segment_keys, segment_results
from mama_pipeline.evaluation._significance import bootstrap_mean_ci, pairwise_significance
from mama_pipeline.evaluation.settings import SegmentSettings


def test_band_labels_and_settings():
    assert band_labels([8, 12]) == ["<8 words", "8-11 words", "12+ words"]
    with pytest.raises(ValueError, match="increasing"):
        SegmentSettings(query_length_bands=[10, 5])
    with pytest.raises(ValueError):
        SegmentSettings(min_queries=1)


def test_keys_band_queries_and_their_most_relevant_chunk():
    queries = pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "query_text": ["a b", "a b c d e", "a  b   c"],
            "tier": ["high", None, "very_high"],
        }
    )
    docs = pl.DataFrame({"doc_id": ["d1", "d2", "d3", "d4"], "text": [" ".join(["w"] * n) for n in (5, 30, 10, 50)]})
    qrels = pl.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q2", "q3"],
            "doc_id": ["d1", "d2", "d3", "d4", "d2"],
            "relevance": [3, 1, 2, 2, 0],
        }
    )
    keys = segment_keys(queries, qrels, docs, 1, [3], [20, 40], ["tier"], {"tier": ["very_high", "high"]})
    got = {(d, q): (s, o) for q, d, s, o in keys.iter_rows()}
    assert got[("tier", "q3")] == ("very_high", 0) and got[("tier", "q1")] == ("high", 1)
    assert got[("tier", "q2")][0] == "(none)"
    assert got[("query length", "q1")][0] == "<3 words" and got[("query length", "q3")][0] == "3+ words"
    # q1: its label-3 chunk (5 words), not the label-1 one; q2: median of its two label-2 chunks (10, 50) = 30
    assert got[("relevant chunk length", "q1")][0] == "<20 words"
    assert got[("relevant chunk length", "q2")][0] == "20-39 words"
    assert got[("relevant chunk length", "q3")][0] == "no relevant chunk"  # label 0 is not relevant
    with pytest.raises(ValueError, match="'d9' of query 'q1' is not in the corpus"):
        segment_keys(
            queries, pl.DataFrame({"query_id": ["q1"], "doc_id": ["d9"], "relevance": [1]}), docs, 1, [3], [20], []
        )


def _evaluated(n=60, seed=1):
    rng = np.random.default_rng(seed)
    ids = [f"q{i:03d}" for i in range(n)]
    rows = []
    for name, skill in (("good", 0.8), ("weak", 0.4)):
        for q in ids:
            first = "rel" if rng.random() < skill else "other"
            rows += [(name, q, f"{q}-{first}", 1), (name, q, f"{q}-x", 2)]
    run = pl.DataFrame(rows, schema=["retriever", "query_id", "doc_id", "rank"], orient="row")
    qrels = pl.DataFrame({"query_id": ids, "doc_id": [f"{q}-rel" for q in ids], "relevance": [1] * n})
    ev = evaluate(run, qrels, ids, beir_plan([1, 3]), ["good", "weak"])
    queries = pl.DataFrame(
        {
            "query_id": ids,
            "query_text": ["short q" if i % 3 else "a much longer query text here" for i in range(n)],
            "source": ["s1" if i < 45 else "s2" for i in range(n)],
        }
    )
    docs = pl.DataFrame({"doc_id": [f"{q}-rel" for q in ids], "text": ["word " * (10 + i) for i in range(n)]})
    return ev, qrels, queries, docs


def test_segment_means_counts_and_tests_only_where_enough_queries(tmp_path):
    ev, qrels, queries, docs = _evaluated()
    keys = segment_keys(queries, qrels, docs, 1, [4], [40], ["source"])
    result = segment_results(ev, keys, ["Success@1", "RR"], 20, n_resamples=500)
    sizes = dict(
        result.board.filter(pl.col("dimension") == "source").select("segment", "n_queries").unique().iter_rows()
    )
    assert sizes == {"s1": 45, "s2": 15}
    s1 = result.board.filter((pl.col("segment") == "s1") & (pl.col("measure") == "Success@1"))
    per_query = ev.per_query.filter(pl.col("measure") == "Success@1").join(queries, on="query_id")
    expected = per_query.filter(pl.col("source") == "s1").group_by("retriever").agg(pl.col("value").mean())
    assert dict(s1.select("retriever", "mean").iter_rows()) == pytest.approx(dict(expected.iter_rows()))
    tested = set(result.significance.select("dimension", "segment").unique().iter_rows())
    assert ("source", "s1") in tested and ("source", "s2") not in tested  # 15 < 20 queries
    assert result.board.filter(pl.col("segment") == "s2")["tested"].sum() == 0
    # a segment's test is the ordinary paired test on that segment's queries
    s1_ids = queries.filter(pl.col("source") == "s1").select("query_id")
    direct = pairwise_significance(
        ev.per_query.join(s1_ids, on="query_id"),
        ["Success@1", "RR"],
        ["good", "weak"],
        n_resamples=500,
        binary_measures={"Success@1"},
    )
    mine = result.significance.filter((pl.col("dimension") == "source") & (pl.col("segment") == "s1"))
    assert mine.drop("dimension", "segment").equals(direct)
    # each mean has the ordinary bootstrap interval of that segment's values, or the reason it has none
    good_s1 = s1.filter(pl.col("retriever") == "good").row(0, named=True)
    values = per_query.filter((pl.col("source") == "s1") & (pl.col("retriever") == "good")).sort("query_id")
    assert (good_s1["ci_low"], good_s1["ci_high"]) == bootstrap_mean_ci(values["value"].to_numpy(), 500, 0)
    assert good_s1["ci_low"] < good_s1["mean"] < good_s1["ci_high"] and good_s1["ci_refused"] is None
    s2 = result.board.filter(pl.col("segment") == "s2")
    assert s2["ci_low"].null_count() == s2.height
    assert all("15 values, fewer than the 30" in r for r in s2["ci_refused"])

    page = write_report(
        ReportInputs(
            title="t", board=scoreboard(ev, qrels), significance=direct, headline="Success@1", segment_tests=result
        ),
        tmp_path / "r",
    )
    html = page.read_text()
    assert "Results by segment" in html and "By source" in html and "By relevant chunk length" in html
    assert "s2</td><td>15</td>" in html and "No segment" not in html.split("By source")[1].split("<h3>")[0]
    assert (tmp_path / "r" / "segments.png").stat().st_size > 1000
    s1_row = html.split("By source")[1].split("s1</td><td>45</td>")[1].split("</tr>")[0]
    assert f"[{good_s1['ci_low']:.3f}, {good_s1['ci_high']:.3f}]" in s1_row  # the table shows the interval too
    svg = (tmp_path / "r" / "segments.svg").read_text()  # the figure's bars carry their n
    assert "n=45" in svg and "n=15" in svg
    again = write_report(
        ReportInputs(
            title="t", board=scoreboard(ev, qrels), significance=direct, headline="Success@1", segment_tests=result
        ),
        tmp_path / "r2",
    )
    assert again.read_bytes() == page.read_bytes()
    assert (tmp_path / "r2" / "segments.png").read_bytes() == (tmp_path / "r" / "segments.png").read_bytes()


def test_segment_bars_show_interval_n_zero_and_missing():
    """A bar with an interval has its error bar; a zero mean is a thick line on the axis; a retriever without
    values in a segment is marked "none"; every bar carries its n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = pl.DataFrame(
        {
            "retriever": ["a", "b", "a"],
            "segment": ["x", "x", "y"],
            "mean": [0.5, 0.25, 0.0],
            "ci_low": [0.4, None, None],
            "ci_high": [0.6, None, None],
            "n": [40, 40, 3],
        }
    )
    fig, ax = plt.subplots()
    interval_bars(ax, stats)
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n=40") == 2 and "n=3" in texts and texts.count("none") == 1  # b has no bar in y
    caps = [c for c in ax.containers if getattr(c, "errorbar", None) is not None]
    whisker = [seg for c in caps for coll in c.errorbar.lines[2] for seg in coll.get_segments()]
    assert any(np.allclose(seg[:, 1], [0.4, 0.6]) for seg in whisker)
    zero_marks = [ln for ln in ax.lines if ln.get_linewidth() == 3 and list(ln.get_ydata()) == [0, 0]]
    assert len(zero_marks) == 1 and zero_marks[0].get_xdata()[0] < 1 < zero_marks[0].get_xdata()[1]  # a in y
    plt.close(fig)
