"""The HTML report's sections: facts, intervals, one sentence per cut, breakdowns, audits, no raw JSON."""

import re

import polars as pl
import pytest

from mama_pipeline.evaluation._per_query_files import first_relevant_ranks, write_per_query_files
from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard
from mama_pipeline.evaluation._retrieval_page import ReportInputs, label_mix, write_report
from mama_pipeline.evaluation._scoreboard_measures import beir_plan, mamaretrieval_plan
from mama_pipeline.evaluation._significance import bootstrap_mean_ci, pairwise_significance

QUERIES = [f"q{i}" for i in range(12)]


@pytest.fixture
def graded():
    rows = []
    for i, q in enumerate(QUERIES):
        rows += [("a", q, f"d{i}", 1), ("a", q, "x", 2), ("b", q, "x", 1), ("b", q, f"d{i}", 2)]
    run = pl.DataFrame(rows, schema=["retriever", "query_id", "doc_id", "rank"], orient="row")
    qrels = pl.DataFrame(
        {"query_id": QUERIES, "doc_id": [f"d{i}" for i in range(12)], "relevance": [6, 4, 3, 5, 1, 6, 2, 3, 4, 5, 6, 0]}
    )
    ev = evaluate(run, qrels, QUERIES, mamaretrieval_plan([1, 3, 5], 3, 5), ["a", "b"])
    tiers = pl.DataFrame({"query_id": QUERIES, "tier": ["high", "low"] * 6})
    sources = pl.DataFrame({"query_id": QUERIES, "source": ["who"] * 8 + ["msf"] * 4})
    board = scoreboard(ev, qrels, tiers)
    sig = pairwise_significance(
        ev.per_query, ["Success(rel=3)@1", "nDCG@3"], ["a", "b"], n_resamples=200, binary_measures={"Success(rel=3)@1"}
    )
    return run, qrels, ev, board, sig, tiers, sources


def full_inputs(graded) -> ReportInputs:
    run, qrels, ev, board, sig, tiers, sources = graded
    audits = [("reference_judge", "self_consistency", "judge-x"), ("cross_model_judge", "cross_model", "judge-y")]
    reliability = pl.concat(
        [
            pl.DataFrame(
                {
                    "reference_stage": [s] * 2,
                    "audit": [k] * 2,
                    "reference_model": [m] * 2,
                    "metric": ["lenient_agreement", "weighted_kappa_linear"],
                    "value": [0.75, 0.4],
                    "pairs": [4, 4],
                }
            )
            for s, k, m in audits
        ]
    )
    confusion = pl.concat(
        [
            pl.DataFrame(
                {
                    "reference_stage": [s] * 7,
                    "audit": [k] * 7,
                    "reference_model": [m] * 7,
                    "main_score": list(range(7)),
                    **{f"ref_{j}": [int(i == j) for i in range(7)] for j in range(7)},
                }
            )
            for s, k, m in audits
        ]
    )
    completeness = pl.DataFrame(
        {
            "scope": ["all", "all"],
            "cut": ["lenient", "strict"],
            "threshold": [3, 5],
            "audit_queries": [2, 2],
            "queries_with_relevant": [2, 1],
            "relevant_known": [3, 1],
            "relevant_in_main_pool": [2, 1],
            "recall_micro": [2 / 3, 1.0],
            "recall_macro": [0.75, 1.0],
        }
    )
    return ReportInputs(
        title="demo",
        board=board,
        significance=sig,
        headline="Success(rel=3)@1",
        header=[("corpus version", "v-123"), ("judge model", "judge-x"), ("judge prompt hash", "abc123")],
        notes=["Leak audit: 0 of 12.", "Leak audit: 0 of 12."],
        per_query=ev.per_query,
        segments={"tier": tiers, "source": sources},
        label_counts=qrels.group_by("relevance").agg(pl.len().alias("count")),
        label_mix=label_mix(run, qrels, 3),
        mix_k=3,
        reliability=reliability,
        confusion=confusion,
        completeness=completeness,
        resamples=300,
    )


def test_report_sections_figures_and_no_json(tmp_path, graded):
    page = write_report(full_inputs(graded), tmp_path / "r")
    html = page.read_text()
    names = sorted(p.name for p in page.parent.iterdir())
    figures = [
        "judge_confusion",
        "judge_confusion_cross_model_judge",
        "metric_by_k",
        "per_source",
        "per_tier",
        "pool_completeness",
        "score_distribution",
        "significance_heatmap",
    ]
    tables = ["per_source", "per_tier", "scoreboard_all_measures", "scoreboard_headline"]
    tables += ["significance_hr_1_lenient", "significance_ndcg_3"]
    assert names == sorted(
        [f"{f}.{ext}" for f in figures for ext in ("pdf", "png", "svg")]
        + [f"{t}.{ext}" for t in tables for ext in ("csv", "tex")]
        + ["scoreboard.html"]
    )  # every figure also as SVG and PDF, every table also as LaTeX and CSV
    for heading in (
        "Scoreboard",
        "Paired significance",
        "Per-tier results",
        "Per-source results",
        "Label distribution",
        "Judge reliability",
        "Pool completeness",
    ):
        assert f"<h2>{heading}</h2>" in html, heading
    assert "<th>corpus version</th><td>v-123</td>" in html and "abc123" in html
    # each reliability audit is named by what it measures
    assert "<h3>Self-consistency (test-retest): judge-x (reference judge)</h3>" in html
    assert "<h3>Cross-model agreement: judge-y (cross-model judge)</h3>" in html
    assert html.count("Leak audit: 0 of 12.") == 1  # a repeated note is shown once
    # headline means over 12 queries, each marked as without interval; the reason (fewer than 30 values) written
    # out once on the page, under the headline, with how many figures it refused
    assert re.search(r"\d\.\d{3} \(no interval\u00b9\)", html)
    assert html.count("fewer than the 30 values a bootstrap interval needs") == 1
    assert re.search(r"\u00b9 interval refused for \d+ figures: fewer than the 30 values", html)
    assert "{" not in html.split("</style>")[1]  # no raw JSON anywhere in the body
    for img in re.findall(r"<img src='([^']+)'", html):
        assert (page.parent / img).stat().st_size > 1000, img


def test_binary_qrels_state_each_cut_once(tmp_path):
    run = pl.DataFrame(
        {"retriever": ["a", "a", "b"], "query_id": ["q1", "q2", "q1"], "doc_id": ["d1", "d9", "d9"], "rank": [1, 1, 1]}
    )
    qrels = pl.DataFrame({"query_id": ["q1", "q2", "q3"], "doc_id": ["d1", "d2", "d3"], "relevance": [1, 1, 0]})
    ev = evaluate(run, qrels, ["q1", "q2", "q3"], beir_plan([1, 10]), ["a", "b"])
    board = scoreboard(ev, qrels)
    sig = pairwise_significance(
        ev.per_query, ["Success@10"], ["a", "b"], n_resamples=200, binary_measures={"Success@10"}
    )
    html = write_report(
        ReportInputs(title="beir", board=board, significance=sig, headline="Success@10", per_query=ev.per_query),
        tmp_path / "r",
    ).read_text()
    sentence = re.search(r"Queries without any qualifying document, of 3: ([^<]*)\.</p>", html).group(1)
    assert sentence == "relevant (label &ge; 1): 1"


def test_bootstrap_mean_interval_brackets_the_mean():
    import numpy as np

    from mama_pipeline.evaluation._significance import StatisticRefused

    values = np.tile([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], 3).astype(float)
    low, high = bootstrap_mean_ci(values, 2000, 0)
    assert low < values.mean() < high and 0 <= low and high <= 1
    assert bootstrap_mean_ci(values, 2000, 0) == (low, high)  # seeded
    with pytest.raises(StatisticRefused, match="all 40 values equal"):
        bootstrap_mean_ci(np.ones(40), 100, 0)
    with pytest.raises(StatisticRefused, match="10 values, fewer than the 30"):
        bootstrap_mean_ci(values[:10], 100, 0)


def test_per_query_files_hold_run_files_and_first_relevant_ranks(tmp_path, graded):
    from mama_pipeline.evaluation._trec import read_trec_run

    run, qrels, ev, *_ = graded
    folder = write_per_query_files(
        ev.per_query,
        ev.retrievers,
        ev.measures,
        ev.query_ids,
        tmp_path / "pq",
        "demo",
        run=run,
        qrels=qrels,
        relevant_at=3,
    )
    back = read_trec_run(folder / "b.run", "b")
    assert (
        back.sort("query_id", "rank")
        .select("query_id", "doc_id", "rank")
        .equals(run.filter(pl.col("retriever") == "b").sort("query_id", "rank").select("query_id", "doc_id", "rank"))
    )
    ranks = pl.read_csv(folder / "b.first_relevant.tsv", separator="\t", schema_overrides={"query_id": pl.String})
    assert ranks["query_id"].to_list() == QUERIES
    # b ranks each query's own document second; q4 (label 1), q6 (2) and q11 (0) have none at >= 3
    expected = {q: (None if q in ("q4", "q6", "q11") else 2) for q in QUERIES}
    assert dict(ranks.iter_rows()) == expected
    assert first_relevant_ranks(run, qrels, "a", ["q0", "q4"], 1).rows() == [("q0", 1), ("q4", 1)]
    import json

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["run_files"] == {"a": "a.run", "b": "b.run"} and manifest["first_relevant_at"] == 3
    assert manifest["first_relevant_files"]["a"] == "a.first_relevant.tsv"
