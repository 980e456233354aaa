"""The robustness assets end to end: real store, real BM25 (and a fusion over it), the fake LLM server,
the release configuration, and byte-identical results when nothing changed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.common.code_version import versioned
from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, label_prompt_hash, output_model
from mama_pipeline.partitions import Partitions
from mama_pipeline.plan._plan_text import plan_bills
from mama_pipeline.queries._query_prompt import query_writer_template
from mama_pipeline.release._verify import verify_release
from mama_pipeline.release.assets import mamaretrieval_release
from mama_pipeline.release.checks import mamaretrieval_release_verifies
from mama_pipeline.resources import shared_resources
from mama_pipeline.retrieval._registry import RetrievalEnv, run_retriever
from mama_pipeline.retrieval.assets import retrieval_input_files
from mama_pipeline.robustness.definitions import build_defs as build_robustness_defs
from mama_pipeline.run_plan import RunStep, changed_partitions, execute_plan, observe_inputs, plan_runs, planned_steps
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.release import fixtures as release_fx
from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame
from mama_pipeline_tests.support.llm_stages import with_embedded

CONFIG = """
data_dir: {data}
llm:
  query_rewriter: {{base_urls: ["{url}"], model: fake-model, backoff_base_s: 0.01}}
  rewrite_gate: {{base_urls: ["{url}"], model: fake-model, backoff_base_s: 0.01}}
  judge: {{base_urls: ["{url}"], model: fake-model, backoff_base_s: 0.01}}
retrieval:
  retrievers:
    - {{name: bm25, kind: bm25}}
    - {{name: bm25-plain, kind: bm25, params: {{stemmer: none, stopwords: false}}}}
    - {{name: fused, kind: rrf, params: {{runs: [bm25, bm25-plain], k: 60}}}}
  pool_retrievers: [bm25]
  pool_depth: 3
  include_seed_chunk: false
  audit: {{n_queries: 2, depth: 3}}
evaluation:
  cutoffs: [1, 3, 5]
  significance_measures: ["Success(rel=3)@3", "RR(rel=3)"]
  headline_measure: "Success(rel=3)@3"
  resamples: 5000
robustness:
  resamples: 200
  rewrite_queries: 3
  max_hole_pairs: {budget}
  release: true
{extra}release:
  mamaretrieval_version: 0.3.0
"""
UPSTREAM = (
    "corpus_chunks",
    "generated_queries",
    "judgments",
    "pooled_pairs",
    "query_gate_decisions",
    "judge_reliability",
)
RETRIEVERS = ("bm25", "bm25-plain", "fused")


def setup(tmp_path: Path, url: str, budget: str = "null", extra: str = "") -> Path:
    data = tmp_path / "data"
    config = tmp_path / "config.yaml"
    config.write_text(with_embedded(CONFIG.format(data=data, url=url, budget=budget, extra=extra)))
    s = load_settings(config)
    store = Store(s.db_path)
    chunks = chunks_frame()
    queries = queries_frame().with_columns(prompt_hash=pl.lit(query_writer_template(20, True).hash))
    store.write_table("corpus_chunks", chunks)
    store.write_table("generated_queries", queries)
    rank_clean(s, store, RETRIEVERS)
    pool = store.read_table("rankings", partitions=["bm25"]).filter(pl.col("rank") <= 3).select("query_id", "chunk_id")
    store.write_table(
        "pooled_pairs", pool.with_columns(retrievers=[["bm25"]] * pool.height, is_seed=False, pool_size=3)
    )
    store.write_table(
        "judgments", synthetic_judgments(pool, label_prompt_hash(RELEVANCE_JUDGE, output_model("json_field")))
    )
    store.write_table("query_gate_decisions", release_fx.gate_decisions())
    store.write_table("judge_reliability", release_fx.reliability())
    return config


def synthetic_judgments(pairs: pl.DataFrame, prompt_hash: str) -> pl.DataFrame:
    n = pairs.height
    scores = [(i * 5) % 7 for i in range(n)]
    return pairs.sort("query_id", "chunk_id").with_columns(
        reused=pl.lit(False),
        judge_model=pl.lit("fake-model"),
        prompt_hash=pl.lit(prompt_hash),
        d1_topic=pl.Series([s > 0 for s in scores]),
        d2_meaningful=pl.Series([min(s, 2) if s else None for s in scores], dtype=pl.Int8),  # null when D1 is false
        d3_actionable=pl.Series([min(max(s - 2, 0), 2) if s else None for s in scores], dtype=pl.Int8),
        d4_density=pl.Series([max(s - 4, 0) if s else None for s in scores], dtype=pl.Int8),
        d3_answered=pl.lit(None, pl.Int8),
        structural_violation=pl.lit(False),
        score=pl.Series(scores, dtype=pl.Int8),
        reasoning=pl.lit("r"),
        judge_endpoint=pl.lit("x"),
        corpus_version=pl.lit("v1"),
        cache_key=pl.lit("k"),
    )


def rank_clean(s, store: Store, names) -> None:
    """The clean rankings of ``names`` (the retrieval group's partitions), in the store."""
    env = RetrievalEnv(
        store,
        s.data_path / "retrieval",
        s.resolve,
        lambda runs, ids: store.read_table("rankings", partitions=runs, where={"query_id": ids}),
        log=lambda _m: None,
    )
    chunks, queries = store.read_table("corpus_chunks"), store.read_table("generated_queries")
    for name in names:
        out = run_retriever(s.retrieval.retriever(name), chunks, queries, s.retrieval.depth_of(name), env)
        store.write_table("rankings", out.rankings, partition=name)


def definitions(config: Path, release: bool = True, checks: bool = True) -> dg.Definitions:
    """The robustness group (its partitions from ``config``, each asset's code version) over the upstream tables,
    which the tests write (``rankings`` and the retrievers' observed input partitioned per retriever), with the
    mamaretrieval release when ``release``, the checks when ``checks``."""
    s = load_settings(config)
    group = build_robustness_defs(s)
    retrievers = Partitions.of(s).retrievers
    specs = [dg.AssetSpec(k) for k in UPSTREAM] + [dg.AssetSpec("rankings", partitions_def=retrievers)]
    assets = [*specs, retrieval_input_files(retrievers), *group.assets]
    asset_checks = list(group.asset_checks) if checks else []
    if release:
        assets.append(mamaretrieval_release)
        asset_checks += [mamaretrieval_release_verifies] if checks else []
    defs = dg.Definitions(assets=assets, asset_checks=asset_checks, resources=shared_resources(str(config)))
    return versioned(defs, s.model_dump(mode="json"))


class Ran:
    """The runs of one materialisation (one Dagster run per step and partition), read as one result."""

    def __init__(self, results: list[dg.ExecuteInProcessResult]):
        self.results = results
        self.success = all(r.success for r in results)
        self.all_events = [e for r in results for e in r.all_events]

    def get_asset_materialization_events(self) -> list:
        return [e for r in self.results for e in r.get_asset_materialization_events()]

    def get_asset_check_evaluations(self) -> list:
        return [c for r in self.results for c in r.get_asset_check_evaluations()]


def materialise(config: Path, instance, must_succeed: bool = True, release: bool = True, checks: bool = True) -> Ran:
    """Every asset of :func:`definitions` in dependency order, a run per step and partition (``run_plan``, as
    ``mama-pipeline materialize --all``)."""
    defs = definitions(config, release, checks)
    graph = defs.resolve_asset_graph()
    steps = plan_runs(graph, graph.materializable_asset_keys)
    result = Ran(execute_plan(defs, steps, instance, raise_on_error=must_succeed))
    assert result.success or not must_succeed
    return result


def meta(result, key: str, partition: str | None = None) -> dict:
    (m,) = [
        ev.materialization.metadata
        for ev in result.get_asset_materialization_events()
        if ev.materialization.asset_key.to_user_string() == key and ev.partition == partition
    ]
    return {k: v.value for k, v in m.items()}


def folder_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_variants_are_ranked_holes_judged_once_scored_and_released(tmp_path, monkeypatch, fake_llm):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup(tmp_path, fake_llm.url)
    store = Store(tmp_path / "data" / "mama.duckdb")
    reads: list[tuple[list | None, list]] = []  # (columns, where columns) of every read of the rankings table
    read_table = Store.read_table

    def spy(self, table, partitions=None, columns=None, where=None):
        if table == "rankings":
            reads.append((columns, sorted(where or {})))
        return read_table(self, table, partitions, columns, where)

    monkeypatch.setattr(Store, "read_table", spy)
    with dg.instance_for_test() as instance:
        first = materialise(config, instance)
        monkeypatch.setattr(Store, "read_table", read_table)
        # the clean rankings: the parents' ranks without their scores, in the holes' and the scoreboard's step
        assert reads == [(["query_id", "retriever", "rank", "chunk_id"], ["query_id"])] * 2
        loaded = {
            e.event_specific_data.input_name
            for e in first.all_events
            if e.event_type_value == "LOADED_INPUT" and e.step_key == "variant_labels"
        }
        assert loaded == {"queries", "query_variants"}  # nor the corpus, the judgments or the variant rankings
        checks = {c.check_name: c.passed for c in first.get_asset_check_evaluations()}
        assert checks["variants_follow_rules"] and checks["holes_judged"] and checks["mamaretrieval_release_verifies"]
        assert checks["coverage_alike"]
        variants = store.read_table("query_variants")
        decisions = store.read_table("variant_decisions")
        assert set(decisions.filter(pl.col("kind").is_in(["typo", "shorthand", "hurried"]))["parent_id"]) == set(
            queries_frame()["query_id"]
        )
        assert decisions.filter(pl.col("kind") == "telegraphic").height == 3  # rewrite_queries
        assert variants.filter(pl.col("variant_id") == "q_00004~shorthand")["query_text"].to_list() == [
            "BP threshold for hypertension in preg"
        ]
        # every variant ranked by both retrievers, fusion included
        rankings = store.read_table("variant_rankings")
        ranked = {r: set(g["query_id"]) for (r,), g in rankings.group_by("retriever")}
        assert set(ranked) == {"bm25", "bm25-plain", "fused"}
        shorthand = set(variants.filter(pl.col("kind") == "shorthand")["variant_id"])
        assert all(shorthand <= ids <= set(variants["variant_id"]) for ids in ranked.values())
        assert ranked["fused"] == ranked["bm25"] | ranked["bm25-plain"]  # the fusion fused the variant rankings
        fused = meta(first, "variant_rankings", "fused")  # its partition, after its runs' (their stored rows)
        assert (
            fused["runs"] == "bm25, bm25-plain"
            and fused["rows"] == rankings.filter(pl.col("retriever") == "fused").height
        )
        # inherited labels are the parent's judged pairs; holes are exactly the unlabelled pairs of the top 3 of
        # the variants and of their parents' clean rankings, by every scored retriever: bm25-plain and fused are
        # outside the pool, so their clean top 3 had unjudged chunks, judged now like the variants'
        labels = store.read_table("variant_labels")
        judgments = store.read_table("judgments")
        inherited = labels.filter(pl.col("origin") == "inherited")
        assert inherited.height == variants.join(judgments.rename({"query_id": "parent_id"}), on="parent_id").height
        holes = store.read_table("variant_holes")
        top = rankings.filter(pl.col("rank") <= 3).join(
            variants.select(pl.col("variant_id").alias("query_id"), "parent_id"), on="query_id"
        )
        clean_top = (
            store.read_table("rankings")
            .filter((pl.col("rank") <= 3) & pl.col("query_id").is_in(variants["parent_id"].implode()))
            .select(pl.col("query_id").alias("parent_id"), "chunk_id")
        )
        unjudged = judgments.select(pl.col("query_id").alias("parent_id"), "chunk_id")
        expected = (
            pl.concat([top.select("parent_id", "chunk_id"), clean_top])
            .unique()
            .join(unjudged, on=["parent_id", "chunk_id"], how="anti")
        )
        assert holes.height == expected.height > 0 and set(holes["status"]) == {"judged"}
        assert clean_top.join(unjudged, on=["parent_id", "chunk_id"], how="anti").height > 0
        assert clean_top.join(
            labels.select("parent_id", "chunk_id").unique(), on=["parent_id", "chunk_id"], how="anti"
        ).is_empty()  # every clean top-3 chunk of a scored retriever is labelled
        hole_meta = meta(first, "variant_holes")
        assert hole_meta["judge/asked"] == hole_meta["judge/http_calls"] == holes.height
        # the plan of the same stage, on the built inputs: every hole (clean and variant side) is labelled now
        (bill,) = [b for b in plan_bills(str(config), ["variant_labels"]) if b.stage == "judge"]
        assert (bill.requests, bill.to_send) == (0, 0), bill.note
        # Judged@3 is complete on both sides of every comparison; the fake server's rewrites share no word
        # with the corpus, so their rankings are empty and have no Judged@3 (never a 0 read as coverage)
        board = store.read_table("robustness_scoreboard")
        overall = board.filter(pl.col("tier") == "all")
        assert set(overall["measure"]) == {"Success(rel=3)@3", "RR(rel=3)"}
        assert overall.height == 2 * 3 * variants["kind"].n_unique()
        noisy = overall.filter(pl.col("kind").is_in(["typo", "shorthand", "hurried"]))
        assert noisy.select(pl.min("clean_judged"), pl.min("variant_judged")).row(0) == (1.0, 1.0)
        assert not noisy["coverage_differs"].any()
        rewritten = overall.filter(pl.col("kind").is_in(["telegraphic", "codeswitch"]))
        assert rewritten["variant_judged"].null_count() == rewritten["variant_ranked"].eq(0).sum() == rewritten.height
        assert (
            overall.select((pl.col("drop") - (pl.col("clean_mean") - pl.col("variant_mean"))).abs().max()).item()
            < 1e-12
        )
        assert set(board["tier"]) >= {"all", "very_high", "high"}
        # the values behind the board, stored for the leaderboard: the significance measures and Judged@k at
        # every cutoff, one row per (retriever, variant, measure); their means are the board's
        per_query = store.read_table("robustness_per_query")
        assert set(per_query["measure"]) == {"Success(rel=3)@3", "RR(rel=3)", "Judged@1", "Judged@3", "Judged@5"}
        assert per_query.height == 3 * variants.height * 5
        means = (
            per_query.filter(~pl.col("measure").str.starts_with("Judged@"))
            .group_by("kind", "retriever", "measure")
            .agg(pl.col("clean").mean(), pl.col("variant").mean())
        )
        joined = overall.join(means, on=["kind", "retriever", "measure"])
        assert joined.height == overall.height
        gaps = joined.select(
            (pl.col("clean") - pl.col("clean_mean")).abs().max(),
            (pl.col("variant") - pl.col("variant_mean")).abs().max(),
        )
        assert max(gaps.row(0)) < 1e-12
        page = tmp_path / "data" / "reports" / "robustness"
        html = (page / "index.html").read_text()
        assert "Judged@3, clean and variant" in html and (page / "drop_by_retriever_and_kind.png").exists()
        folder = tmp_path / "data" / "releases" / "mamaretrieval" / "0.3.0"
        assert verify_release(folder).ok
        manifest = json.loads((folder / "manifest.json").read_text())
        section = manifest["configurations"]["robustness"]
        assert section["figures"]["variants"] == variants.height
        assert [k["name"] for k in section["kinds"]] == ["typo", "shorthand", "hurried", "telegraphic", "codeswitch"]
        card = (folder / "README.md").read_text()
        assert "config_name: robustness_queries" in card and "## Robustness configuration" in card
        released = pl.read_parquet(folder / "robustness" / "judgments.parquet")
        assert released.height == labels.height and set(released["origin"]) <= {"inherited", "hole"}
        snapshot = {
            t: store.read_table(t)
            for t in (
                "variant_decisions",
                "query_variants",
                "variant_rankings",
                "variant_labels",
                "variant_holes",
                "robustness_scoreboard",
                "robustness_per_query",
            )
        }
        hashes = folder_hashes(folder)

        calls = fake_llm.stats()["chat_calls"]
        second = materialise(config, instance)
        assert fake_llm.stats()["chat_calls"] == calls  # nothing re-asked: rewrites, gate and holes all cached
        assert meta(second, "variant_holes")["holes/judged"] == 0  # reused from the label store
        again = store.read_table("variant_holes")
        assert set(again["status"]) == {"reused"}
        assert again.drop("status").equals(snapshot.pop("variant_holes").drop("status"))
        for name, frame in snapshot.items():
            assert store.read_table(name).equals(frame), name
        assert folder_hashes(folder) == hashes


ADDED = {"name": "bm25-k12", "kind": "bm25", "params": {"k1": 1.2, "b": 0.75}}


def test_a_retriever_added_to_a_finished_run_ranks_the_variants_in_its_own_partition_only(
    tmp_path, monkeypatch, fake_llm
):
    """Maintainer case (b): a retriever added to the configuration and scored on the existing labels. Of the variant
    rankings only its new partition runs; the others are neither stale nor run, and keep their rows."""
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup(tmp_path, fake_llm.url)
    monkeypatch.setenv("MAMA_CONFIG", str(config))  # the observed inputs read the configuration through it
    store = Store(tmp_path / "data" / "mama.duckdb")
    key = dg.AssetKey("variant_rankings")

    def run_what_changed(instance) -> dict:
        defs = definitions(config)
        graph = defs.resolve_asset_graph()
        observe_inputs(defs, instance)
        planned = changed_partitions(graph, graph.materializable_asset_keys, instance)
        assert all(r.success for r in execute_plan(defs, planned_steps(graph, planned, planned.followers), instance))
        return planned

    def made(instance) -> dict[str, int]:
        records = instance.fetch_materializations(key, limit=100).records
        return {p: sum(r.partition_key == p for r in records) for p in {r.partition_key for r in records}}

    with dg.instance_for_test() as instance:
        first = run_what_changed(instance)
        assert set(first[key]) == set(RETRIEVERS)
        before = store.read_table("variant_rankings").sort("retriever", "query_id", "rank")
        assert made(instance) == dict.fromkeys(RETRIEVERS, 1)
        raw = yaml.safe_load(config.read_text())
        raw["retrieval"]["retrievers"].append(ADDED)
        config.write_text(yaml.safe_dump(raw))
        rank_clean(load_settings(config), store, [ADDED["name"]])  # its rankings partition, as retrieval makes it
        second = run_what_changed(instance)
        assert second[key] == {"bm25-k12": "never materialised"}
        assert made(instance) == {**dict.fromkeys(RETRIEVERS, 1), "bm25-k12": 1}
        after = store.read_table("variant_rankings").sort("retriever", "query_id", "rank")
        assert after.filter(pl.col("retriever") != "bm25-k12").equals(before)
        assert set(after.filter(pl.col("retriever") == "bm25-k12")["query_id"]) >= set(
            store.read_table("query_variants").filter(pl.col("kind") == "shorthand")["variant_id"]
        )
        # the board scores it beside the others
        assert set(store.read_table("robustness_scoreboard")["retriever"]) == {*RETRIEVERS, "bm25-k12"}


def test_a_hole_budget_leaves_the_rest_unjudged_and_lowers_judged_at_k(tmp_path, monkeypatch, fake_llm):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup(tmp_path, fake_llm.url, budget="1")
    store = Store(tmp_path / "data" / "mama.duckdb")
    with dg.instance_for_test() as instance:
        result = materialise(config, instance)
    holes = store.read_table("variant_holes")
    assert holes["status"].to_list()[0] == "judged" and set(holes["status"].to_list()[1:]) == {"over_budget"}
    assert holes["best_rank"].to_list() == sorted(holes["best_rank"].to_list())
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks["holes_judged"] is False and checks["coverage_alike"] is False
    board = store.read_table("robustness_scoreboard").filter(pl.col("tier") == "all")
    flagged = board.filter(pl.col("coverage_differs"))
    assert flagged.height > 0
    assert (flagged["clean_judged"] - flagged["variant_judged"]).abs().min() > 0.05  # the default tolerance
    assert (
        board.filter(pl.col("coverage_differs").not_())
        .select((pl.col("clean_judged") - pl.col("variant_judged")).abs().max())
        .item()
        <= 0.05
    )


def test_a_retriever_without_clean_rankings_is_refused_naming_it(tmp_path, monkeypatch, fake_llm):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup(tmp_path, fake_llm.url)
    store = Store(tmp_path / "data" / "mama.duckdb")
    store.write_table("rankings", store.read_table("rankings").clear(), partition="bm25-plain")
    with dg.instance_for_test() as instance:
        result = materialise(config, instance, must_succeed=False)
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_key == "variant_labels"
    message = failure.event_specific_data.error.cause.message
    assert message.strip() == (
        "ValueError: robustness: retriever 'bm25-plain' has no clean rankings stored for any "
        "of the 5 parent queries; materialise its rankings partition first"
    )
    assert "robustness_scoreboard" not in {
        e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
    }


def test_the_clean_top_k_is_judged_even_where_no_variant_surfaces_it(tmp_path, monkeypatch, fake_llm):
    """Every query word rewritten to a token the corpus lacks: the variants rank nothing (nor does the fusion
    of their rankings), so every hole is in the clean top 3 of bm25-plain and fused, which the pool (bm25
    only) never judged."""
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    words = sorted({w for text in queries_frame()["query_text"] for w in text.lower().split()})
    table = tmp_path / "garble.tsv"
    table.write_text("long_form\tshort_form\n" + "".join(f"{w}\tzq{i}\n" for i, w in enumerate(words)))
    config = setup(
        tmp_path, fake_llm.url, extra=f"  abbreviations: {table}\n  kinds: [{{name: garbled, steps: [shorthand]}}]\n"
    )
    store = Store(tmp_path / "data" / "mama.duckdb")
    with dg.instance_for_test() as instance:
        result = materialise(config, instance, release=False)
    assert result.success
    assert store.read_table("query_variants").height == 5 and store.read_table("variant_rankings").is_empty()
    assert meta(result, "variant_rankings", "fused")["not_ranked"] == "its runs ranked no variant"  # nothing to fuse
    judged = store.read_table("judgments").select(pl.col("query_id").alias("parent_id"), "chunk_id")
    clean_top = (
        store.read_table("rankings")
        .filter(pl.col("rank") <= 3)
        .select(pl.col("query_id").alias("parent_id"), "chunk_id")
        .unique()
    )
    unjudged = clean_top.join(judged, on=["parent_id", "chunk_id"], how="anti")
    holes = store.read_table("variant_holes")
    assert unjudged.height > 0
    assert holes.select("parent_id", "chunk_id").sort(pl.all()).equals(unjudged.sort(pl.all()))
    assert set(holes["sides"]) == {"clean"} and set(holes["status"]) == {"judged"}
    board = store.read_table("robustness_scoreboard").filter(pl.col("tier") == "all")
    assert set(board["retriever"]) == {"bm25", "bm25-plain", "fused"}
    assert set(board["clean_judged"]) == {1.0} and set(board["clean_ranked"]) == {5}
    assert set(board["variant_ranked"]) == {0} and board["variant_judged"].null_count() == board.height
    assert set(board["variant_mean"]) == {0.0} and board["coverage_differs"].null_count() == board.height


def test_a_retriever_left_out_of_robustness_retrievers_has_an_empty_partition_saying_why(
    tmp_path, monkeypatch, fake_llm
):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup(tmp_path, fake_llm.url, extra="  retrievers: [bm25]\n")
    store = Store(tmp_path / "data" / "mama.duckdb")
    with dg.instance_for_test() as instance:
        result = materialise(config, instance, release=False, checks=False)
    for name in ("bm25-plain", "fused"):
        why = {"retriever": name, "rows": 0, "not_ranked": "not in robustness.retrievers"}
        assert why.items() <= meta(result, "variant_rankings", name).items()
    assert set(store.read_table("variant_rankings")["retriever"]) == {"bm25"}
    assert set(store.read_table("robustness_scoreboard")["retriever"]) == {"bm25"}


def test_a_fusion_partition_run_before_its_runs_partitions_is_refused_in_one_line(tmp_path, monkeypatch, fake_llm):
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    config = setup(tmp_path, fake_llm.url)
    defs = definitions(config, release=False, checks=False)
    graph = defs.resolve_asset_graph()
    key = dg.AssetKey("variant_rankings")
    with dg.instance_for_test() as instance:
        assert all(r.success for r in execute_plan(defs, plan_runs(graph, [dg.AssetKey("query_variants")]), instance))
        bm25_only = RunStep((key,), graph.get(key).partitions_def, only=("bm25",))
        fused_only = RunStep((key,), graph.get(key).partitions_def, only=("fused",))
        (ran,) = execute_plan(defs, [bm25_only, fused_only], instance, raise_on_error=False)[1:]
    failure = next(e for e in ran.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.event_specific_data.error.cause.message.strip() == (
        "ValueError: robustness: rrf retriever 'fused' reads the variant rankings of ['bm25-plain'], never "
        "materialised; materialise those variant_rankings partitions first"
    )


@pytest.mark.parametrize("budget", ["null", "4"])
def test_the_steps_read_a_slice_of_parents_at_a_time_and_write_the_tables_of_one_pass(
    tmp_path, monkeypatch, fake_llm, budget
):
    """Slices of two of the five parents: every read of the variant rankings, the clean rankings and the variant
    labels in the holes' and the scoreboard's steps, and every judging of holes, names one slice's parents at most,
    and the tables and the page are those of one slice of all five (with a hole budget that a slice alone would
    spend otherwise)."""
    from mama_pipeline.judging import _judge as judge
    from mama_pipeline.robustness import _labels as labels
    from mama_pipeline.robustness import _robustness_scoreboard as robustness_scoreboard
    from mama_pipeline.robustness import assets as robustness_assets

    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    read_table = Store.read_table
    reads: list[tuple[str, list[str]]] = []  # (table, the parents whose rows were asked for)

    def spy(self, table, partitions=None, columns=None, where=None):
        if table in ("rankings", "variant_rankings", "variant_labels"):
            ids = next(iter((where or {"": ["(all)"]}).values()))
            reads.append((table, sorted({i.split("~")[0] for i in ids})))
        return read_table(self, table, partitions, columns, where)

    def run(folder: Path, config: Path) -> tuple[dict[str, pl.DataFrame], str]:
        with dg.instance_for_test() as instance:
            materialise(config, instance, release=False, checks=False)
        store = Store(folder / "data" / "mama.duckdb")
        tables = ("variant_labels", "variant_holes", "robustness_per_query", "robustness_scoreboard")
        page = folder / "data" / "reports" / "robustness" / "index.html"
        return {t: read_table(store, t) for t in tables}, page.read_text()  # not spied

    opened, slices_of = judge._opened, robustness_assets.judge_pair_slices
    judged: list[list[str]] = []  # the parents of each judging of holes (a slice's run opened)
    judging_slices: list[bool] = []

    def judging(client, store, pairs, *args, **kwargs):
        if judging_slices:  # not the judged_labels shards' runs
            judged.append(pairs.get_column("query_id").unique().sort().to_list())
        return opened(client, store, pairs, *args, **kwargs)

    def slices_judged(*args, **kwargs):
        judging_slices.append(True)
        try:
            yield from slices_of(*args, **kwargs)
        finally:
            judging_slices.pop()

    folders = [tmp_path / "whole", tmp_path / "sliced"]
    configs = [setup(f, fake_llm.url, budget=budget) for f in folders if not f.mkdir()]
    whole, whole_page = run(folders[0], configs[0])
    monkeypatch.setattr(judge, "_opened", judging)
    monkeypatch.setattr(robustness_assets, "judge_pair_slices", slices_judged)
    monkeypatch.setattr(Store, "read_table", spy)
    monkeypatch.setattr(robustness_scoreboard, "PARENT_SLICE", 2)
    monkeypatch.setattr(labels, "PARENTS_PER_SLICE", 2)
    sliced, sliced_page = run(folders[1], configs[1])
    parents = sorted(queries_frame()["query_id"])
    slices = [parents[0:2], parents[2:4], parents[4:5]]
    # the fusion's partition reads its runs' variant rankings (one slice of variants: every parent's); the holes' step
    # reads both rankings a slice of parents at a time, then the scoreboard's step reads them and the labels
    assert reads == [
        ("variant_rankings", parents),
        *[(t, ids) for ids in slices for t in ("variant_rankings", "rankings")],
        *[(t, ids) for ids in slices for t in ("rankings", "variant_rankings", "variant_labels")],
    ]
    holes = whole["variant_holes"]
    assert holes.height > 4 and holes.filter(pl.col("status") == "over_budget").height == (
        holes.height - 4 if budget == "4" else 0
    )
    judged_parents = holes.filter(pl.col("status") != "over_budget").get_column("parent_id")
    assert judged == [[p for p in ids if p in set(judged_parents)] for ids in slices]
    for name, frame in whole.items():
        assert sliced[name].equals(frame), name
    assert sliced_page == whole_page
    per_query = whole["robustness_per_query"]
    assert per_query.equals(per_query.sort("retriever", "kind", "measure", "parent_id"))  # the table's order
    typo = per_query.filter((pl.col("kind") == "typo") & (pl.col("measure") == "RR(rel=3)"))
    assert typo["retriever"].unique(maintain_order=True).to_list() == ["bm25", "bm25-plain", "fused"]
    assert len({parents.index(q) // 2 for q in typo["parent_id"]}) > 1  # each key's rows come from several slices
