"""Prediction-powered estimates: a hand-worked cell, the refusal rules, the scoreboard's judge-only figures,
and a simulation with a judge biased by a known amount."""

import json
import math
import random
import re

import polars as pl
import pytest

from mama_pipeline.clinician._clinician_page import estimates_table
from mama_pipeline.clinician._estimates import ESTIMATED, REFUSED, ppi_estimates
from mama_pipeline.common.html_page import number
from mama_pipeline.common.strata import uniform_sample
from mama_pipeline.evaluation._per_query_scoring import evaluate, scoreboard
from mama_pipeline.evaluation._runs import rankings_to_run
from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan
from mama_pipeline_tests.support.llm_stages import with_embedded

PAIR = {"query_id": pl.String, "chunk_id": pl.String}


def _frame(rows: list[tuple], cols: dict) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=cols, orient="row")


def _reads(run: pl.DataFrame):
    """A whole run frame (retriever, query_id, chunk_id, rank) as ppi_estimates takes a run: one retriever's rows at
    a time, and the retrievers."""
    whole = rankings_to_run(run)
    return (lambda name: whole.filter(pl.col("retriever") == name)), whole["retriever"].unique().to_list()


def _hand_case():
    """Two queries (tiers a, b), one retriever, top-2 each; pool depth 2."""
    run = _frame(
        [("r", "q1", "c1", 1), ("r", "q1", "c2", 2), ("r", "q2", "c3", 1), ("r", "q2", "c4", 2)],
        {"retriever": pl.String, "query_id": pl.String, "chunk_id": pl.String, "rank": pl.Int64},
    )
    queries = _frame([("q1", "a"), ("q2", "b")], {"query_id": pl.String, "tier": pl.String})
    pool = run.select("query_id", "chunk_id")
    judge = _frame([("q1", "c1", 6), ("q1", "c2", 4), ("q2", "c3", 3), ("q2", "c4", 0)], {**PAIR, "score": pl.Int8})
    clin = _frame([("q1", "c1", 5), ("q1", "c2", 1), ("q2", "c3", 3)], {**PAIR, "score": pl.Int8})
    return run, queries, pool, judge, clin


def test_a_hand_worked_cell_and_the_refusal_rules():
    run, queries, pool, judge, clin = _hand_case()
    plan = mamaretrieval_plan([2, 3], 3, 5, 6)
    out = ppi_estimates(
        *_reads(run),
        queries,
        pool,
        judge,
        clin,
        pool,
        plan,
        min_pairs=3,
        synthetic=True,
        circularity={"r": "same family"},
    )
    cell = out.filter((pl.col("tier") == "all") & (pl.col("label") == "P@2 lenient")).row(0, named=True)
    # judge, lenient cut 3: 1, 1, 1, 0 -> 3 of 4 slots; clinicians on the three labelled pairs: 1, 0, 1
    # PPI: 3/4 + mean(1-1, 0-1, 1-1) = 0.75 - 1/3; sd: judge values (1,1,1,0) pop sd sqrt(3)/4 over sqrt(4),
    # differences (0,-1,0) pop sd sqrt(2)/3 over sqrt(3): half-width 0.682, so the interval -0.265..1.098 is
    # clipped to what P@2 can be here (pairs fill every slot: 0..1)
    assert cell["judge_only"] == 0.75 and cell["status"] == ESTIMATED
    assert cell["estimate"] == pytest.approx(0.75 - 1 / 3)
    half = 1.959964 * math.sqrt((math.sqrt(3) / 4) ** 2 / 4 + (math.sqrt(2) / 3) ** 2 / 3)
    assert 0.75 - 1 / 3 - half < 0 and 0.75 - 1 / 3 + half > 1 and (cell["ci_low"], cell["ci_high"]) == (0.0, 1.0)
    assert (cell["sampled"], cell["labelled"], cell["unresolved"]) == (4, 3, 1)
    assert cell["synthetic"] and cell["circularity"] == "same family"
    wp = out.filter((pl.col("tier") == "all") & (pl.col("label") == "wP@2")).row(0, named=True)
    # judge (6+4+3+0)/6/4 = 13/24; clinicians minus judge: (5-6, 1-4, 3-3)/6 -> mean -4/18
    assert wp["judge_only"] == pytest.approx(13 / 24) and wp["estimate"] == pytest.approx(13 / 24 - 4 / 18)
    tier_a = out.filter((pl.col("tier") == "a") & (pl.col("label") == "P@2 lenient")).row(0, named=True)
    assert tier_a["status"] == REFUSED and tier_a["estimate"] is None and tier_a["judge_only"] == 1.0
    assert "2 sampled pairs with a clinicians' majority label; an estimate needs at least 3" in tier_a["reason"]
    # k = 3 goes below the pool only when the retriever returned a third chunk: here it did not (4 slots empty)
    deeper = run.vstack(_frame([("r", "q1", "c9", 3)], dict(run.schema)))
    p3 = (
        ppi_estimates(*_reads(deeper), queries, pool, judge, clin, pool, plan, 3)
        .filter((pl.col("tier") == "all") & (pl.col("label") == "P@3 lenient"))
        .row(0, named=True)
    )
    assert p3["status"] == REFUSED and "1 of the 5 top-k pairs were never pooled" in p3["reason"]
    none = ppi_estimates(*_reads(run), queries, pool, judge, clin, pool.clear(), plan, 3)
    assert (none["status"] == REFUSED).all() and (none["design"] == "none").all()
    assert none["reason"].str.contains("the stratified agreement sample supports none of these figures").all()


def test_estimates_read_one_retriever_at_a_time_from_the_store_are_the_whole_runs(store):
    """Two retrievers' rankings stored as partitions (rows out of rank order, a third partition not asked for):
    the estimates from StoredRun's per-retriever reads are those of the whole run frame, and their figures are
    the hand-worked ones."""
    from mama_pipeline.evaluation._stored_run import StoredRun

    run, queries, pool, judge, clin = _hand_case()
    other = run.with_columns(retriever=pl.lit("s"), rank=3 - pl.col("rank"))  # s ranks each query's pair the other way
    stray = run.with_columns(retriever=pl.lit("t"))
    for name, frame in (("s", other.reverse()), ("t", stray), ("r", run.reverse())):
        store.write_table("rankings", frame.with_columns(score=pl.lit(1.0)), partition=name)
    plan = mamaretrieval_plan([1, 2], 3, 5, 6)
    stored = StoredRun(store, ["s", "r"])
    ours = ppi_estimates(stored.of_retriever, stored.retrievers, queries, pool, judge, clin, pool, plan, 3)
    assert ours.equals(ppi_estimates(*_reads(pl.concat([run, other])), queries, pool, judge, clin, pool, plan, 3))
    assert ours["retriever"].unique(maintain_order=True).to_list() == ["r", "s"]
    every = ours.filter(pl.col("tier") == "all")
    judge_only = {(r, lab): v for r, lab, v in every.select("retriever", "label", "judge_only").iter_rows()}
    # top-1 lenient: r has c1 (6), c3 (3): 2 of 2; s has c2 (4), c4 (0): 1 of 2. wP@1: (6+3)/12, (4+0)/12
    assert judge_only[("r", "P@1 lenient")] == 1.0 and judge_only[("s", "P@1 lenient")] == 0.5
    assert judge_only[("r", "wP@1")] == pytest.approx(9 / 12) and judge_only[("s", "wP@1")] == pytest.approx(4 / 12)
    top2 = every.filter(pl.col("label") == "P@2 lenient")  # the same four pairs for both: the hand-worked cell
    assert top2["judge_only"].to_list() == [0.75, 0.75] and top2["status"].to_list() == [ESTIMATED] * 2
    assert top2["estimate"].to_list() == pytest.approx([0.75 - 1 / 3] * 2)


def test_uniform_sample_is_seeded_every_pair_alike_and_stable_when_the_pool_grows():
    pool = pl.DataFrame({"query_id": [f"q{i % 10}" for i in range(60)], "chunk_id": [f"c{i}" for i in range(60)]})
    a = uniform_sample(pool, ["query_id", "chunk_id"], 12, seed=7)
    assert a.equals(uniform_sample(pool.reverse(), ["query_id", "chunk_id"], 12, seed=7)) and a.height == 12
    assert not a.equals(uniform_sample(pool, ["query_id", "chunk_id"], 12, seed=8))
    assert uniform_sample(pool, ["query_id", "chunk_id"], 100, seed=7).height == 60
    grown = pool.vstack(pl.DataFrame({"query_id": ["q0"] * 6, "chunk_id": [f"n{i}" for i in range(6)]}))
    b = uniform_sample(grown, ["query_id", "chunk_id"], 12, seed=7)
    kept = a.join(b, on=["query_id", "chunk_id"], how="semi").height
    new = b.filter(pl.col("chunk_id").str.starts_with("n")).height
    assert kept + new == 12  # an old pair leaves only for a new one
    # every pair alike: over 400 seeds each of 60 pairs is drawn 400 x 12/60 = 80 times on average
    counts = (
        pl.concat([uniform_sample(pool, ["query_id", "chunk_id"], 12, seed=s) for s in range(400)])
        .group_by("chunk_id")
        .len()["len"]
    )
    assert counts.len() == 60 and 50 < counts.min() and counts.max() < 110


def test_judge_only_figures_are_the_scoreboards():
    """Against ir_measures' P@k and the scoreboard's wP@k on a ranking with unjudged and missing slots."""
    rng = random.Random(3)
    rows = [("r1" if i % 2 else "r2", f"q{q}", f"c{rng.randrange(30)}", 0) for q in range(6) for i in range(8)]
    ranked = (
        pl.DataFrame(rows, schema=["retriever", "query_id", "chunk_id", "rank"], orient="row")
        .unique(["retriever", "query_id", "chunk_id"], maintain_order=True)
        .with_columns(rank=pl.int_range(pl.len()).over("retriever", "query_id") + 1)
    )
    ranked = ranked.filter(~((pl.col("query_id") == "q0") & (pl.col("retriever") == "r1")))  # nothing returned
    queries = pl.DataFrame({"query_id": [f"q{q}" for q in range(7)], "tier": ["x", "y"] * 3 + ["x"]})
    pool = ranked.select("query_id", "chunk_id").unique()
    judge = pool.with_columns(score=pl.Series([rng.randrange(7) for _ in range(pool.height)], dtype=pl.Int8))
    judge = judge.head(judge.height - 3)  # three pooled pairs the judge could not label: they count 0
    plan = mamaretrieval_plan([1, 3, 5], 3, 5, 6)
    ours = ppi_estimates(*_reads(ranked), queries, pool, judge, judge.clear(), pool.clear(), plan, 2)
    run = rankings_to_run(ranked)
    qrels = judge.select(
        "query_id", pl.col("chunk_id").alias("doc_id"), pl.col("score").cast(pl.Int64).alias("relevance")
    )
    ev = evaluate(run, qrels, queries["query_id"].to_list(), plan, ["r1", "r2"])
    board = scoreboard(ev, qrels, queries)
    both = ours.join(board.select("retriever", "tier", "measure", "mean"), on=["retriever", "tier", "measure"])
    assert both.height == ours.height == 2 * 3 * 9
    assert both.select((pl.col("judge_only") - pl.col("mean")).abs().max()).item() < 1e-12
    # and both pages print them alike (html_page.number), the clinician page naming the denominator
    assert [number(v) for v in both["judge_only"]] == [number(v) for v in both["mean"]]
    table = estimates_table(ours.filter(pl.col("tier") == "all"))
    assert set(table["top_k_places"]) == {"7 queries × 1", "7 queries × 3", "7 queries × 5"}


def test_simulation_judge_biased_by_a_known_amount_ppi_covers_the_truth():
    """200 seeded replicates: a pool of 100 queries x top-10 of one retriever (1000 pairs), true relevance
    Bernoulli(0.3), a judge that calls 25% of the irrelevant pairs relevant and 10% of the relevant ones
    irrelevant (bias +0.25 x 0.7 - 0.10 x 0.3 = +0.145 on P@10), 200 pairs drawn uniformly for clinicians
    who give the true label. Observed: the judge-only figure misses the truth by 0.113 to 0.187 (asserted:
    more than 0.08 in every replicate); the PPI 95% interval covers it in 197 of 200 (0.985: a little
    conservative, as ppi_py applies no finite-population correction). Tolerance: coverage within 0.90..0.99,
    about three binomial standard errors (0.015) below 0.95 and two above."""
    plan = mamaretrieval_plan([10], 3, 5, 6)
    queries = pl.DataFrame({"query_id": [f"q{q:03d}" for q in range(100)], "tier": "t"})
    covered, misses = 0, []
    for rep in range(200):
        rng = random.Random(rep)
        run_rows, judge_rows, truth_rows = [], [], []
        for q in range(100):
            for rank in range(1, 11):
                qid, cid = f"q{q:03d}", f"c{q:03d}_{rank}"
                relevant = rng.random() < 0.3
                called = (rng.random() >= 0.10) if relevant else (rng.random() < 0.25)
                run_rows.append(("r", qid, cid, rank))
                judge_rows.append((qid, cid, 4 if called else 1))
                truth_rows.append((qid, cid, 4 if relevant else 1))
        run = pl.DataFrame(run_rows, schema=["retriever", "query_id", "chunk_id", "rank"], orient="row")
        judge = _frame(judge_rows, {**PAIR, "score": pl.Int8})
        truth = _frame(truth_rows, {**PAIR, "score": pl.Int8})
        pool = run.select("query_id", "chunk_id")
        sample = uniform_sample(pool, ["query_id", "chunk_id"], 200, seed=rep)
        clin = truth.join(sample, on=["query_id", "chunk_id"], how="semi")
        cell = (
            ppi_estimates(*_reads(run), queries, pool, judge, clin, sample, plan, 30)
            .filter((pl.col("tier") == "all") & (pl.col("label") == "P@10 lenient"))
            .row(0, named=True)
        )
        true_p = sum(s >= 3 for _, _, s in truth_rows) / 1000
        misses.append(abs(cell["judge_only"] - true_p))
        covered += cell["ci_low"] <= true_p <= cell["ci_high"]
    assert min(misses) > 0.08
    assert 0.90 <= covered / 200 <= 0.99, covered


def test_asset_with_an_estimation_sample_report_card_and_default_card(tmp_path):
    """The fixture's four pairs, each one query's top chunk of bm25 (stored rankings), all drawn by the
    estimation design; the clinicians' majority is untied on two of them (scores 2 and 4)."""
    import dagster as dg
    import yaml

    from mama_pipeline.clinician._clinician_page import markdown_section
    from mama_pipeline.release._clinician_part import configurations
    from mama_pipeline.resources import shared_resources
    from mama_pipeline.store import Store
    from mama_pipeline_tests.clinician import fixtures as fx

    for kind in ("relevance", "scope"):  # made-up annotations, marked as such in the export itself
        tasks = fx.export_file_tasks(kind, {"one": 11, "two": 12})
        for task in tasks:
            for annotation in task["annotations"]:
                annotation["synthetic"] = True
        (tmp_path / f"{kind}.json").write_text(json.dumps(tasks))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            yaml.safe_dump(
                {
                    "data_dir": str(tmp_path / "data"),
                    "retrieval": {"retrievers": [{"name": "bm25", "kind": "bm25"}]},
                    "evaluation": {"cutoffs": [1], "lenient": 3, "strict": 5},
                    "clinician": {
                        "exports": {"relevance": "relevance.json", "scope": "scope.json"},
                        "relevance_sample_size": 0,
                        "estimation_sample_size": 10,
                        "min_estimation_pairs": 2,
                        "scope_sample_size": 3,
                        "release_synthetic_labels": True,
                    },
                }
            )
        )
    )
    store = Store(tmp_path / "data" / "mama.duckdb")
    ranked = (
        fx.judgments_frame()
        .select("query_id", "chunk_id")
        .with_columns(retriever=pl.lit("bm25"), rank=pl.lit(1, pl.Int32), score=pl.lit(1.0))
    )
    store.write_table("rankings", ranked, partition="bm25")
    result = dg.materialize(fx.ALL, resources=shared_resources(str(cfg)))
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["estimates_follow_the_sample_size_rule"]
    tasks = store.read_table("clinician_tasks").filter(pl.col("kind") == "relevance")
    assert tasks["estimation_sample"].all() and (tasks["stratum"] == "uniform").all() and tasks.height == 4
    est = store.read_table("clinician_estimates")
    cell = est.filter((pl.col("tier") == "all") & (pl.col("label") == "P@1 lenient")).row(0, named=True)
    # judge 6, 3, 0, 3 -> lenient 1, 1, 0, 1: 3 of 4 slots; clinicians on pairs 2 and 4: 0 and 1 vs judge 1, 1
    # (half-width 0.81: clipped to 0..1)
    assert (cell["judge_only"], cell["labelled"], cell["unresolved"]) == (0.75, 2, 2)
    # the two unresolved pairs are ties: pair 1 (annotators 6 and 5), pair 3 (0 and 1); at the lenient cut both
    # ways agree with the judge (1, 0): differences -1, 0, 0, 0 -> 0.75 - 0.25 = 0.5 either way
    assert (cell["tied"], cell["estimate_ties_low"], cell["estimate_ties_high"]) == (2, 0.5, 0.5)
    wp_all = est.filter((pl.col("tier") == "all") & (pl.col("label") == "wP@1")).row(0, named=True)
    # wP@1: judge 1, 1/2, 0, 1/2 (0.5); labelled differences -1/6, 1/6; ties low: pair 1 at 5 (-1/6), pair 3 at 0
    # (0) -> mean -1/24; high: pair 1 at 6 (0), pair 3 at 1 (+1/6) -> mean +1/24
    assert wp_all["estimate_ties_low"] == pytest.approx(0.5 - 1 / 24)
    assert wp_all["estimate_ties_high"] == pytest.approx(0.5 + 1 / 24)
    meta = result.asset_materializations_for_node("clinician_estimates")[0].metadata["estimates"].value
    header = meta.splitlines()[0]
    assert all(f"| {c} |" in header for c in ("sampled", "labelled", "unresolved", "tied", "estimate_ties_low"))
    assert (cell["estimate"], cell["ci_low"], cell["ci_high"]) == pytest.approx((0.25, 0.0, 1.0))
    # tier high, wP@1: judge 3/6, 3/6; clinicians 2/6, 4/6: differences -1/6, 1/6 (pop sd 1/6 over sqrt(2)),
    # the judge's values have sd 0: 0.5 +- 1.96 x 0.1179
    wp = est.filter((pl.col("tier") == "high") & (pl.col("label") == "wP@1")).row(0, named=True)
    half = 1.959964 * (1 / 6) / math.sqrt(2)
    assert (wp["estimate"], wp["ci_low"], wp["ci_high"]) == pytest.approx((0.5, 0.5 - half, 0.5 + half), abs=1e-5)
    strict = est.filter((pl.col("tier") == "high") & (pl.col("label") == "P@1 strict")).row(0, named=True)
    assert (
        strict["status"] == "refused" and "every one of the 2 labelled pairs agrees with the judge" in strict["reason"]
    )
    assert cell["synthetic"] and "the query writer (smollm2-135m-instruct) share the model" in cell["circularity"]
    page = (tmp_path / "data" / "reports" / "clinician" / "agreement.html").read_text()
    assert "Judge-only and corrected figures" in page and "SYNTHETIC annotators" in page
    assert "0.250 [" in page and "0 sampled pairs with a clinicians&#x27; majority label" in page
    assert re.search(r"No corrected figure for \d+ cells? \(retriever, tier and measure\): ", page)
    assert "<td>2 of 4 (2 tied)</td><td>0.500 / 0.500</td>" in page  # unresolved of sampled; ties each way
    from mama_pipeline.settings import load_settings

    (rel,) = configurations("mamaretrieval", store, load_settings(cfg))
    assert "### Judge-only and corrected figures" in rel.card_section and "prediction-powered" in rel.card_section
    # no estimation sample (the default): the card's section is what it was before the estimates existed
    metrics, validated = store.read_table("clinician_agreement"), store.read_table("clinician_validated")
    none = est.with_columns(design=pl.lit("none"))
    assert markdown_section(metrics, validated, "relevance", True, 2, none) == markdown_section(
        metrics, validated, "relevance", True, 2
    )
