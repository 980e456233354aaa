"""The evaluation group in Dagster: scoreboard, per-query files, significance, report; a run file added later."""

import subprocess
import sys

import dagster as dg
import numpy as np
import polars as pl

from mama_pipeline.evaluation._per_query_files import read_per_query_file
from mama_pipeline.evaluation._segments import mamaretrieval_segments
from mama_pipeline.evaluation._stored_qrels import StoredQrels
from mama_pipeline.evaluation.definitions import build_defs as build_evaluation_defs
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.evaluation.synthetic import as_judging_table
from mama_pipeline_tests.stand_ins import as_corpus_chunks, as_generated_queries
from mama_pipeline_tests.support.llm_stages import with_embedded

defs = build_evaluation_defs(load_settings())

TIERS = ["very_high", "high", "moderate"]


def _inputs(seed: int = 2):
    rng = np.random.default_rng(seed)
    queries = pl.DataFrame(
        {
            "query_id": [f"q_{i:05d}" for i in range(1, 31)],
            "query_text": [f"question {i}" for i in range(1, 31)],
            "tier": [TIERS[i % 3] for i in range(30)],
        }
    )
    rankings, judged = [], {}
    for name, skill in (("alpha", 0.7), ("beta", 0.3)):
        for q in queries["query_id"]:
            chunks = rng.choice(40, 10, replace=False)
            for rank, c in enumerate(chunks, start=1):
                cid = f"c{int(c):03d}"
                rankings.append((q, name, rank, cid, float(11 - rank)))
                judged.setdefault(
                    (q, cid), int(rng.integers(2, 7)) if rng.random() < skill else int(rng.integers(0, 3))
                )
    judged[("q_00001", "c000")] = 6  # c000 quotes question 1 (see the chunks stub): one leaked query
    rankings = pl.DataFrame(rankings, schema=["query_id", "retriever", "rank", "chunk_id", "score"], orient="row")
    judgments = pl.DataFrame(
        [(q, c, s) for (q, c), s in judged.items()], schema=["query_id", "chunk_id", "score"], orient="row"
    )
    return queries, rankings, as_judging_table(judgments)


def _config(tmp_path, run_files: str = "[]"):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\n"
            "retrieval:\n  retrievers:\n    - {name: alpha, kind: bm25}\n    - {name: beta, kind: bm25}\n"
            f"evaluation:\n  resamples: 200\n  run_files: {run_files}\n  segments: {{min_queries: 10}}\n"
            "corpus:\n  tiers:\n" + "".join(f"    {t}: {{quota: 1, sources: [s-{t}]}}\n" for t in TIERS)
        )
    )
    return cfg


def _materialize(cfg, queries, judgments, selection):
    @dg.asset(key="generated_queries")
    def queries_stub() -> pl.DataFrame:
        return as_generated_queries(queries)

    @dg.asset(key="corpus_chunks")
    def chunks_stub() -> pl.DataFrame:
        return as_corpus_chunks(
            pl.DataFrame(
                {
                    "chunk_id": [f"c{i:03d}" for i in range(40)],
                    "text": ["Text: question 1 in full."] + [f"chunk {i}" for i in range(1, 40)],
                    "source": ["src-a"] * 40,
                }
            )
        )

    @dg.asset(key="judgments")
    def judgments_stub() -> pl.DataFrame:
        return judgments

    result = dg.materialize(
        [queries_stub, chunks_stub, judgments_stub, *defs.assets, *defs.asset_checks],
        resources=shared_resources(str(cfg)),
        selection=selection,
    )
    assert result.success
    return result


def _ranked(tmp_path):
    """The inputs, the configuration and a store holding alpha's and beta's rankings."""
    queries, rankings, judgments = _inputs()
    store = Store(tmp_path / "data" / "mama.duckdb")
    for name in ("alpha", "beta"):
        store.write_table("rankings", rankings.filter(pl.col("retriever") == name), partition=name)
    return queries, judgments, _config(tmp_path), store


def test_scoreboard_report_and_a_retriever_added_without_rejudging(tmp_path, monkeypatch):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    queries, judgments, cfg, store = _ranked(tmp_path)

    evaluation = dg.AssetSelection.assets(
        "scoreboard",
        "per_query_results",
        "significance",
        "evaluation_report",
        "segment_scoreboard",
        "segment_significance",
    )
    result = _materialize(
        cfg,
        queries,
        judgments,
        dg.AssetSelection.assets("generated_queries", "corpus_chunks", "judgments")
        | evaluation
        | dg.AssetSelection.checks_for_assets("scoreboard", "significance"),
    )
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {"scoreboard_covers_every_query": True, "significance_covers_every_pair": True}

    board = store.read_table("scoreboard")
    overall = board.filter(pl.col("tier") == "all")
    assert set(overall["retriever"]) == {"alpha", "beta"} and set(overall["n_queries"]) == {30}
    assert set(board["tier"]) == {"all", *TIERS}
    hr = dict(overall.filter(pl.col("measure") == "Success(rel=3)@5").select("retriever", "mean").iter_rows())
    assert hr["alpha"] > hr["beta"]
    sig = store.read_table("significance")
    assert sig.height == 5 and set(sig["retriever_a"]) == {"alpha"}  # one pair x five measures
    segments = store.read_table("segment_scoreboard")
    tiers = segments.filter(pl.col("dimension") == "tier").sort("segment_order")
    assert tiers["segment"].unique(maintain_order=True).to_list() == TIERS  # in the corpus settings' order
    assert set(tiers["n_queries"]) == {10} and tiers["tested"].all()
    assert set(segments["dimension"]) == {"tier", "source", "query length", "relevant chunk length"}
    # every tier segment's mean is the mean of its queries' per-query values
    per_query = store.read_table("per_query_results").join(queries.select("query_id", "tier"), on="query_id")
    expected = per_query.group_by("retriever", "measure", "tier").agg(pl.col("value").mean())
    got = tiers.join(expected, left_on=["retriever", "measure", "segment"], right_on=["retriever", "measure", "tier"])
    assert got.height == tiers.height and np.allclose(got["mean"], got["value"])
    seg_sig = store.read_table("segment_significance")
    assert seg_sig.filter(pl.col("dimension") == "tier").height == 3 * 5  # three tiers x five measures, one pair
    # the segments read the relevant judgments alone: the same tables as from every judged pair
    settings = load_settings(cfg)
    whole = mamaretrieval_segments(
        store.read_table("per_query_results"),
        store.read_table("judgments"),
        store.read_table("generated_queries"),
        store.read_table("corpus_chunks"),
        settings.evaluation,
        list(settings.corpus.tiers),
    )
    assert segments.equals(whole.board) and seg_sig.equals(whole.significance)
    assert StoredQrels(store).judged_at(settings.evaluation.lenient).height < store.read_table("judgments").height
    assert (seg_sig["n_queries"] >= 10).all()

    per_query_dir = tmp_path / "data" / "results" / "per_query" / "mamaretrieval"
    a = read_per_query_file(per_query_dir / "alpha.perquery.tsv")
    b = read_per_query_file(per_query_dir / "beta.perquery.tsv")
    assert a["query_id"].to_list() == b["query_id"].to_list() == queries["query_id"].to_list()
    mats = {
        m.asset_key.to_user_string(): m.metadata
        for m in (e.materialization for e in result.get_asset_materialization_events())
    }
    assert mats["evaluation_report"]["leaked_queries_exact"].value == 1
    page = mats["evaluation_report"]["report"].value
    assert page.endswith("reports/evaluation/scoreboard.html")
    html = open(page, encoding="utf-8").read()
    assert "Paired significance" in html and "HR@5 lenient" in html and "per_tier.png" in html
    assert "Results by segment" in html and "By query length" in html and "segments.png" in html
    # every stage on the embedded model: the judge labels pairs for queries its own model wrote
    assert (
        "Circular: the relevance judge (smollm2-135m-instruct) and the query writer (smollm2-135m-instruct) share the "
        "model: every retriever"
    ) in html
    assert "| llm.judge | smollm2-135m-instruct | llm.query_writer |" in mats["scoreboard"]["circularity"].value
    for png in ("metric_by_k.png", "per_tier.png", "score_distribution.png", "segments.png"):
        assert (tmp_path / "data" / "reports" / "evaluation" / png).stat().st_size > 1000

    # a third retriever arrives as a run file: half its chunks were never judged
    run_file = tmp_path / "gamma.trec"
    lines = []
    for q in queries["query_id"]:
        for rank in range(1, 11):
            doc = f"c{rank:03d}" if rank % 2 else f"new{rank:03d}"
            lines.append(f"{q} Q0 {doc} {rank} {20 - rank} gamma-run")
    run_file.write_text("\n".join(lines) + "\n")
    cfg = _config(tmp_path, f"[{{name: gamma, path: {run_file}}}]")
    labels_before = store.read_table("judgments")
    result = _materialize(cfg, queries, judgments, evaluation | dg.AssetSelection.checks_for_assets("scoreboard"))
    assert {
        m.asset_key.to_user_string() for m in (e.materialization for e in result.get_asset_materialization_events())
    } == {
        "scoreboard",
        "per_query_results",
        "significance",
        "evaluation_report",
        "segment_scoreboard",
        "segment_significance",
    }  # judgments not re-materialised
    assert store.read_table("judgments").equals(labels_before)
    overall = store.read_table("scoreboard").filter(pl.col("tier") == "all")
    judged10 = dict(overall.filter(pl.col("measure") == "Judged@10").select("retriever", "mean").iter_rows())
    assert set(judged10) == {"alpha", "beta", "gamma"} and judged10["alpha"] == 1.0 and judged10["gamma"] <= 0.5
    sig = store.read_table("significance")
    assert sig.filter(pl.col("measure") == "RR(rel=3)").select("retriever_a", "retriever_b").rows() == [
        ("alpha", "beta"),
        ("alpha", "gamma"),
        ("beta", "gamma"),
    ]
    assert (per_query_dir / "gamma.perquery.tsv").exists()


def test_definitions_load_without_heavy_imports():
    heavy = ("torch", "pyserini", "faiss", "matplotlib", "sentence_transformers", "scipy", "statsmodels")
    code = (
        "import sys; from mama_pipeline.evaluation.definitions import build_defs; "
        "from mama_pipeline.settings import load_settings; build_defs(load_settings()); "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    sources = [a.key.to_user_string() for a in defs.assets if isinstance(a, dg.SourceAsset)]
    assert sources == ["evaluation_input_files"]  # the run files and BEIR folders the settings name, observed
    keys = {k.to_user_string() for a in assets for k in a.keys}
    assert keys == {
        "scoreboard",
        "per_query_results",
        "significance",
        "evaluation_report",
        "beir_scoreboard",
        "beir_significance",
        "beir_audits",
        "segment_scoreboard",
        "segment_significance",
        "beir_segment_scoreboard",
        "beir_segment_significance",
        "held_out_scoreboard",
    }
    assert {a.group_names_by_key[k] for a in assets for k in a.keys} == {"evaluation"}


def test_the_scoreboard_step_reads_labels_and_values_in_parts(tmp_path, monkeypatch):
    """The judgments are read a slice of queries at a time and the per-query values a retriever or a measure at a
    time; the means, files and metadata agree with the stored values."""
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    queries, judgments, cfg, store = _ranked(tmp_path)
    reads: list[tuple[str, dict]] = []
    read_table = Store.read_table

    def spy(self, table, partitions=None, columns=None, where=None):
        reads.append((table, {k: len(v) for k, v in (where or {}).items()}))
        return read_table(self, table, partitions, columns, where)

    monkeypatch.setattr(Store, "read_table", spy)
    result = _materialize(
        cfg,
        queries,
        judgments,
        dg.AssetSelection.assets(
            "generated_queries", "corpus_chunks", "judgments", "scoreboard", "per_query_results", "significance"
        ),
    )
    assert ("judgments", {"query_id": 30}) in reads
    assert [w for t, w in reads if t == "judgments"] == [{"query_id": 30}] * 2  # one slice, once per retriever
    assert [w for t, w in reads if t == "per_query_results"] == [{"retriever": 1}] * 4 + [{"measure": 5}]
    monkeypatch.setattr(Store, "read_table", read_table)

    per_query = store.read_table("per_query_results")
    assert per_query.height == 2 * 30 * per_query["measure"].n_unique()
    assert per_query.select("retriever").unique(maintain_order=True)["retriever"].to_list() == ["alpha", "beta"]
    overall = store.read_table("scoreboard").filter(pl.col("tier") == "all")
    means = per_query.group_by("retriever", "measure").agg(pl.col("value").mean().alias("expected"))
    joined = overall.join(means, on=["retriever", "measure"])
    assert joined.height == overall.height == means.height and np.allclose(joined["mean"], joined["expected"])
    a = read_per_query_file(tmp_path / "data" / "results" / "per_query" / "mamaretrieval" / "alpha.perquery.tsv")
    rr = per_query.filter((pl.col("retriever") == "alpha") & (pl.col("measure") == "RR(rel=3)"))
    assert a["RR(rel=3)"].to_list() == rr["value"].to_list()
    meta = {
        m.asset_key.to_user_string(): m.metadata
        for m in (e.materialization for e in result.get_asset_materialization_events())
    }
    assert meta["per_query_results"]["values"].value == meta["per_query_results"]["rows"].value == per_query.height
    assert meta["scoreboard"]["dropped_rows"].value == (
        '{"qrels of queries outside the benchmark": 0, "run rows of queries outside the benchmark": 0}'
    )
    assert meta["scoreboard"]["queries_without_results"].value == '{"alpha": 0, "beta": 0}'


def test_the_per_query_values_are_computed_before_the_store_write_takes_its_lock(tmp_path, monkeypatch):
    """The values go to scratch files first: the store's write lock, which every other step's write waits on, is
    not held while they are computed (at ten times the paper a small step's write waited 46 s on them)."""
    import mama_pipeline.evaluation.assets as evaluation_assets

    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    queries, judgments, cfg, _ = _ranked(tmp_path)
    events: list[str] = []
    blocks, write_table = evaluation_assets.per_query_blocks, Store.write_table

    def counted_blocks(*args, **kwargs):
        for block in blocks(*args, **kwargs):
            events.append("block")
            yield block

    def spy(self, table, df, partition=None, step_context=None):
        if table == "per_query_results":
            events.append("write")
        return write_table(self, table, df, partition, step_context)

    monkeypatch.setattr(evaluation_assets, "per_query_blocks", counted_blocks)
    monkeypatch.setattr(Store, "write_table", spy)
    _materialize(
        cfg,
        queries,
        judgments,
        dg.AssetSelection.assets(
            "generated_queries", "corpus_chunks", "judgments", "scoreboard", "per_query_results", "significance"
        ),
    )
    assert events.count("block") == 2 and events[-1] == "write"  # a block per retriever (30 queries: one slice)
