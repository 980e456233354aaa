"""The plan before a run (``mama-pipeline plan``, the ``llm_plan`` asset) and the budget in a Dagster run,
against a real DuckDB store and the fault-injecting OpenAI-compatible server; the plan sends nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.judging._judge import judge_pairs
from mama_pipeline.judging._rubric import output_model
from mama_pipeline.plan._plan_text import plan_bills
from mama_pipeline.queries._query_prompt import answer_model, query_requests, query_writer_template
from mama_pipeline.resources import LLMResource, SettingsResource, shared_resources
from mama_pipeline.settings import SAMPLE_CONFIG, load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.support.synthetic_judging import make_chunks, make_pool, make_queries

CHUNKS = pl.DataFrame(
    {
        "chunk_id": ["c1", "c2", "c3"],
        "source": ["who", "who", "msf"],
        "breadcrumb": [["Bleeding"], [], ["Fever", "Sepsis"]],
        "text": ["Give oxytocin 10 IU after birth.", "Check the uterus every 15 minutes.", "Start antibiotics early."],
        "page": [1, 2, 3],
        "given_cid": [None] * 3,
        "line": [1, 2, 3],
        "ordinal": [1, 2, 3],
        "corpus_version": ["v1"] * 3,
        "tier": ["high"] * 3,
        "section": ["Bleeding", "", "Fever"],
    },
    schema_overrides={"given_cid": pl.String},
)


def write_config(tmp_path: Path, fake_llm, **stage_overrides) -> str:
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    raw["data_dir"] = str(tmp_path / "data")
    for stage in ("query_writer", "judge"):
        raw["llm"][stage].update(
            base_urls=[fake_llm.url], model="fake-model", backoff_base_s=0.01, concurrency=2, **stage_overrides
        )
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(with_embedded(raw)))
    return str(path)


def store_of(config: str) -> Store:
    return Store(load_settings(config).db_path)


def one(bills, asset: str, stage: str):
    (b,) = [b for b in bills if (b.asset, b.stage) == (asset, stage)]
    return b


def writer_requests(config: str):
    s = load_settings(config)
    template = query_writer_template(s.queries.max_words, s.llm.query_writer.reasoning == "json_field")
    return template, answer_model(s.llm.query_writer.reasoning == "json_field"), query_requests(CHUNKS, template)


def test_a_stage_whose_inputs_are_not_in_the_store_says_so(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm)
    b = one(plan_bills(config, ["generated_queries"]), "generated_queries", "query_writer")
    assert b.requests is None and b.to_send is None and b.note == "inputs not yet built: sampled_chunks"


def test_plan_counts_cached_and_new_requests_and_prices_them_from_recorded_latencies(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm)
    store = store_of(config)
    store.write_table("sampled_chunks", CHUNKS)
    template, model, requests = writer_requests(config)
    before = fake_llm.stats()["chat_calls"]
    b = one(plan_bills(config, ["generated_queries"]), "generated_queries", "query_writer")
    assert (b.requests, b.cached, b.to_send, b.model, b.max_tokens, b.slots) == (3, 0, 3, "fake-model", 512, 2)
    # no local tokenizer for "fake-model": characters / 4, rounded up, per request
    chars = [sum(len(m["content"]) for m in r.messages) for r in requests]
    assert b.prompt_tokens == sum(-(-c // 4) for c in chars) and b.tokens_counted_by.startswith("estimate")
    assert b.latency_s is None and b.expected_s is None and b.latency_from == "none recorded; give --latency-s"
    b = one(plan_bills(config, ["generated_queries"], latency_s=1.5), "generated_queries", "query_writer")
    assert b.expected_s == 3.0 and b.latency_from == "--latency-s"  # ceil(3 / 2 slots) x 1.5 s
    assert fake_llm.stats()["chat_calls"] == before  # planning sends nothing

    with LLMResource(settings=SettingsResource(config_path=config)).client("query_writer") as client:
        client.run(template, model, requests[:1])
    with store.connect(write=True) as con:
        con.execute("UPDATE llm_responses SET latency_s = 4.0")
    before = fake_llm.stats()["chat_calls"]
    b = one(plan_bills(config, ["generated_queries"], latency_s=1.5), "generated_queries", "query_writer")
    assert (b.requests, b.cached, b.to_send) == (3, 1, 2)
    assert b.prompt_tokens == sum(-(-c // 4) for c in chars[1:])
    assert b.latency_s == 4.0 and b.latency_from == "median of 1 cached ok answers"
    assert b.expected_s == 4.0  # ceil(2 / 2 slots) x 4.0 s: the recorded latency, not the command line's
    assert fake_llm.stats()["chat_calls"] == before


def store_judge_inputs(store: Store, queries: pl.DataFrame, chunks: pl.DataFrame, pool: pl.DataFrame) -> None:
    """The judge's inputs as their assets store them: queries (one seed chunk each), chunks and the pool."""
    stored_queries = queries.with_columns(  # the columns the tables' DDL asks for
        seed_chunk_id=pl.Series(chunks["chunk_id"][: queries.height]),
        model=pl.lit("m"),
        prompt_hash=pl.lit("h"),
        temperature=pl.lit(0.0),
        reason=pl.lit(None, pl.String),
        corpus_version=pl.lit("v1"),
    )
    stored_chunks = chunks.drop("tier").with_columns(
        breadcrumb=pl.lit([], pl.List(pl.String)),
        given_cid=pl.lit(None, pl.String),
        line=pl.col("page"),
        ordinal=pl.col("page"),
    )
    for name, df in (("generated_queries", stored_queries), ("corpus_chunks", stored_chunks), ("pooled_pairs", pool)):
        store.write_table(name, df)


def test_judge_plan_leaves_out_the_pairs_with_a_stored_label(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm)
    store = store_of(config)
    queries, chunks = make_queries(2), make_chunks(4)
    pool = make_pool(queries, chunks, per_query=3)  # 6 pairs
    store_judge_inputs(store, queries, chunks, pool)
    s = load_settings(config)
    with LLMResource(settings=SettingsResource(config_path=config)).client("judge") as client:
        judge_pairs(client, store, pool.head(2), queries, chunks, output_model(s.llm.judge.reasoning))
    before = fake_llm.stats()["chat_calls"]
    b = one(plan_bills(config, ["judged_labels"]), "judged_labels", "judge")
    assert (b.requests, b.cached, b.to_send) == (4, 0, 4)  # 2 pairs labelled already: not asked again
    assert fake_llm.stats()["chat_calls"] == before


def test_adaptive_judging_is_billed_as_budget_plus_remainder_sample(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm)
    raw = yaml.safe_load(Path(config).read_text())
    raw["judging"] = {**raw.get("judging", {}), "strategy": "adaptive", "budget": 0.25, "remainder_sample": 5}
    Path(config).write_text(yaml.safe_dump(raw))
    store = store_of(config)
    queries, chunks = make_queries(8), make_chunks(20)
    pool = make_pool(queries, chunks, per_query=5)  # 40 pairs: budget 10, sample 5
    store_judge_inputs(store, queries, chunks, pool)
    b = one(plan_bills(config, ["judged_labels"]), "judged_labels", "judge")
    assert (b.requests, b.to_send) == (15, 15) and pool.height == 40
    raw["judging"]["budget"] = 38  # a count: 38 + the 2 pairs left
    Path(config).write_text(yaml.safe_dump(raw))
    assert one(plan_bills(config, ["judged_labels"]), "judged_labels", "judge").requests == 40


@pytest.mark.parametrize("strategy", ["full", "adaptive"])
def test_a_judge_plan_read_a_slice_of_pairs_at_a_time_has_the_batches_of_one_run(
    tmp_path, fake_llm, monkeypatch, strategy
):
    """The judge's plan joins some pairs with their chunks at a time (plan/_planners.py SLICE_PAIRS): its runs are
    the batches judge_pairs would send of every hole at once (judging.batch_pairs each, across slices)."""
    from mama_pipeline.judging import pair_batches
    from mama_pipeline.judging._judge import judge_holes
    from mama_pipeline.plan import _planners

    config = write_config(tmp_path, fake_llm)
    raw = yaml.safe_load(Path(config).read_text())
    raw["judging"] = {
        **raw.get("judging", {}),
        "batch_pairs": 4,
        "strategy": strategy,
        "budget": 0.5,
        "remainder_sample": 5,
    }
    Path(config).write_text(yaml.safe_dump(raw))
    store = store_of(config)
    queries, chunks = make_queries(6), make_chunks(20)
    pool = make_pool(queries, chunks, per_query=5)  # 30 pairs
    store_judge_inputs(store, queries, chunks, pool)
    s = load_settings(config)
    model = output_model(s.llm.judge.reasoning)
    with LLMResource(settings=SettingsResource(config_path=config)).client("judge") as client:
        judge_pairs(client, store, pool.slice(3, 4), queries, chunks, model)  # 4 pairs labelled: no holes
        holes = judge_holes(client, store, pool, queries, chunks, model)
        if strategy == "adaptive":  # 15 budgeted + 5 of the remainder sampled, of the 26 holes
            holes = holes.sample(20, seed=s.judging.seed).sort("query_id", "chunk_id")
        expected = [[r.item_id for r in requests] for _, requests in pair_batches(holes, 4)]
        monkeypatch.setattr(_planners, "SLICE_PAIRS", 3)
        inp = _planners.Inputs(s, store)
        runs = [[r.item_id for r in run.requests] for run in _planners._judged_labels(inp, "judge", client)]
    assert runs == expected and [len(r) for r in runs] == [4] * (len(holes) // 4) + [len(holes) % 4] * (
        len(holes) % 4 > 0
    )
    assert sum(map(len, runs)) == (26 if strategy == "full" else 20)


def run_cli(config: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MAMA_CONFIG": config, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "mama_pipeline.cli", "plan", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_cli_prints_the_plan_and_exits_1_when_a_stage_is_over_budget(tmp_path, fake_llm):
    config = write_config(tmp_path, fake_llm, max_new_requests=2)
    store_of(config).write_table("sampled_chunks", CHUNKS)
    before = fake_llm.stats()["chat_calls"]
    out = run_cli(config, "--select", "generated_queries", "--latency-s", "2")
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    block = lines[lines.index("generated_queries · query_writer · fake-model") :]
    # the configuration's relative bundle path resolves against its folder, where there is none
    assert block[1].startswith("  bound: at most ? requests (bound not computed: corpus bundle ")
    assert block[2] == "  prompt tokens: at most ? (not computed: the requests are not bounded)"
    assert block[3].startswith("  requests 3: 0 cached, 3 to send; prompt tokens to send ")
    assert block[4].startswith(
        "  completion cap 512 tokens a request (up to 1,536 completion tokens); "
        "expected 4.0 s with 2 answered at once (latency 2.00 s a request: --latency-s)"
    )
    assert block[5] == (
        "  OVER BUDGET: stage query_writer: over its budget, stopped before sending: "
        "3 new requests > max_new_requests 2"
    )
    assert not any(line.startswith("judged_labels") for line in lines)  # only the selection's stages
    assert fake_llm.stats()["chat_calls"] == before


@pytest.mark.parametrize(
    "args, reason",
    [
        (["--latency-s", "0"], "--latency-s 0: must be a positive number of seconds"),
        (["--rate", "-1"], "--rate -1: must be a positive number of requests a second per server"),
        (["--select", "no_such_asset"], "--select 'no_such_asset': "),
    ],
)
def test_cli_bad_arguments_are_one_line_and_exit_2(tmp_path, fake_llm, args, reason):
    out = run_cli(write_config(tmp_path, fake_llm), *args)
    assert out.returncode == 2 and out.stderr.startswith(f"mama-pipeline: error: {reason}")
    assert len(out.stderr.strip().splitlines()) == 1


def test_llm_plan_asset_shows_the_plan_as_metadata(tmp_path, fake_llm):
    from mama_pipeline.plan.definitions import build_defs as build_plan_defs
    from mama_pipeline.settings import load_settings

    defs = build_plan_defs(load_settings())

    config = write_config(tmp_path, fake_llm)
    store_of(config).write_table("sampled_chunks", CHUNKS)
    result = dg.materialize(list(defs.assets), resources=shared_resources(config))
    meta = {k: v.value for k, v in result.asset_materializations_for_node("llm_plan")[0].metadata.items()}
    assert meta["requests_to_send"] == 3 and meta["stages_over_budget"] == 0
    frame = store_of(config).read_table("llm_plan")
    assert meta["prompt_tokens_bound"] == frame["bound_tokens"].sum() > 0
    assert "generated_queries · query_writer · fake-model" in meta["plan"]
    assert frame.filter(pl.col("asset") == "generated_queries")["to_send"].to_list() == [3]


def test_a_dagster_run_over_budget_fails_before_sending(tmp_path, fake_llm):
    from mama_pipeline.corpus.definitions import build_defs as build_corpus_defs
    from mama_pipeline.queries.definitions import build_defs as build_queries_defs
    from mama_pipeline.settings import load_settings

    corpus_defs, queries_defs = build_corpus_defs(load_settings()), build_queries_defs(load_settings())

    config = write_config(tmp_path, fake_llm, max_new_requests=2)
    store_of(config).write_table("sampled_chunks", CHUNKS)
    before = fake_llm.stats()["chat_calls"]
    result = dg.materialize(
        [*corpus_defs.assets, *queries_defs.assets],
        selection=["generated_queries", "query_gate_decisions"],
        resources=shared_resources(config),
        raise_on_error=False,
    )
    assert not result.success and fake_llm.stats()["chat_calls"] == before
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    cause = failure.step_failure_data.error.cause  # the asset's own exception, under Dagster's wrapper
    assert cause.cls_name == "BudgetExceeded" and cause.message.strip() == (
        "mama_pipeline.llm.budget.BudgetExceeded: stage query_writer: over its budget, stopped before sending: "
        "3 new requests > max_new_requests 2"
    )


def test_requests_with_the_same_prompt_are_one_to_send_and_the_plan_says_so(make_client, fake_llm):
    from pydantic import BaseModel

    from mama_pipeline.llm.client import LLMRequest
    from mama_pipeline.llm.prompt_template import PromptTemplate
    from mama_pipeline.llm.settings import StageSettings
    from mama_pipeline.plan._bill import PlannedRun, StagePlan, bill
    from mama_pipeline.plan._plan_text import render

    class Answer(BaseModel):
        text: str

    template = PromptTemplate(id="repeat", system="Say it.", user="{text}")
    requests = [LLMRequest(i, template.render(text=t)) for i, t in (("a", "same"), ("b", "same"), ("c", "other"))]
    client = make_client(stage="query_writer")
    plan = StagePlan(
        "some_asset", "query_writer", StageSettings(concurrency=1), [PlannedRun(template, Answer, requests)]
    )
    b = bill(plan, client, latency_s=0.5)
    assert (b.requests, b.cached, b.to_send, b.slots, b.expected_s) == (3, 0, 2, 1, 1.0)  # ceil(2 / 1) x 0.5 s
    assert "requests 3: 0 cached, 2 to send (1 share a prompt with another request: asked once);" in render([b])
    # "Say it." + "same": 11 characters, 3 tokens; "Say it." + "other": 12 characters, 3 tokens
    assert render([b]).endswith(
        "To send: 2 requests, 6 prompt tokens (stage plans computed: 1 of 1); 1.0 s if the stages run one after another"
    )
    unpriced = bill(plan, client)
    assert unpriced.expected_s is None and render([b, unpriced]).endswith(
        "1.0 s if the stages run one after another, not counting 1 stage plans with requests to send but no latency"
    )
    assert render([unpriced]).endswith("expected time unknown (no latency recorded or given: --latency-s)")


def test_slots_are_concurrency_per_base_url_or_the_embedded_servers_slots():
    from mama_pipeline.llm.settings import StageSettings
    from mama_pipeline.plan._bill import slots_of

    two_urls = StageSettings(base_urls=["http://a:1/v1", "http://b:1/v1"], model="m", concurrency=4)
    assert slots_of(two_urls, embedded_slots=1) == 8
    assert slots_of(StageSettings(concurrency=8), embedded_slots=1) == 1  # the embedded server answers one at a time
    assert slots_of(StageSettings(concurrency=2), embedded_slots=4) == 2


def test_answering_systems_closed_book_planned_rag_not_computed_graders_wait_for_answers(tmp_path, fake_llm):
    from mama_pipeline.systems._items import benchmark_items
    from mama_pipeline_tests.systems.fixtures import items_frame, mcq, short

    config = write_config(tmp_path, fake_llm)  # the sample's systems: smollm-closed (every track), smollm-rag (mcq)
    items = benchmark_items(
        items_frame(
            [
                mcq("m1", "Which drug prevents haemorrhage?", ["Oxytocin", "Aspirin"], 0),
                mcq("m2", "Which drug treats eclampsia?", ["Magnesium sulfate", "Paracetamol"], 0),
                short("s1", "When is oxytocin given?", "Within a minute of birth"),
            ]
        )
    )
    store_of(config).write_table("systems_items", items)
    before = fake_llm.stats()["chat_calls"]
    bills = plan_bills(config, ["system_answers", "system_grades"])
    closed = one(bills, "system_answers", "system:smollm-closed")
    assert (closed.requests, closed.cached, closed.to_send, closed.max_tokens) == (3, 0, 3, 48)
    rag = one(bills, "system_answers", "system:smollm-rag")
    assert rag.requests is None and rag.note == (
        "2 items; not computed: each prompt carries the chunks bm25 retrieves, and the plan runs no retrieval"
    )
    grader = one(bills, "system_grades", "answer_grader")
    assert grader.requests is None and grader.note == "inputs not yet built: system_answers"
    assert fake_llm.stats()["chat_calls"] == before


def test_multipassage_writer_plan_has_the_runs_real_writing_asks_one_schema_per_set_size(tmp_path, fake_llm):
    from mama_pipeline.multipassage._chunk_lookup import chunk_lookup
    from mama_pipeline.multipassage._multipassage_prompts import writer_template
    from mama_pipeline.multipassage._questions import run_writer

    config = write_config(tmp_path, fake_llm)
    store = store_of(config)
    store.write_table("corpus_chunks", CHUNKS.drop("section", "tier"))
    rows = [
        ("ms_a", 2, ["c1", "c2"], "sampled"),
        ("ms_b", 3, ["c1", "c2", "c3"], "sampled"),
        ("ms_c", 2, ["c2", "c3"], "sampled"),
        ("ms_d", 2, ["c1", "c3"], "not_sampled"),
    ]
    store.write_table(
        "multipassage_candidates",
        pl.DataFrame(
            {
                "set_id": [r[0] for r in rows],
                "kind": ["section"] * 4,
                "size": [r[1] for r in rows],
                "chunk_ids": [r[2] for r in rows],
                "anchor_chunk_id": [r[2][0] for r in rows],
                "source": ["who"] * 4,
                "tier": ["high"] * 4,
                "sources": [["who"]] * 4,
                "section": [None] * 4,
                "min_similarity": [None] * 4,
                "status": [r[3] for r in rows],
                "drop_reason": [None] * 4,
                "corpus_version": ["v1"] * 4,
            },
            schema_overrides={"section": pl.String, "min_similarity": pl.Float64},
        ),
    )
    b = one(plan_bills(config, ["multipassage_questions"]), "multipassage_questions", "query_writer")
    assert (b.requests, b.cached, b.to_send) == (3, 0, 3)  # the three sampled sets, two schemas (sizes 2 and 3)

    s = load_settings(config)
    reasoning = s.llm.query_writer.reasoning == "json_field"
    sampled = store.read_table("multipassage_candidates").filter(pl.col("status") == "sampled")
    with LLMResource(settings=SettingsResource(config_path=config)).client("query_writer") as client:
        run_writer(
            client,
            writer_template(s.multipassage.max_words, reasoning),
            reasoning,
            sampled,
            chunk_lookup(store.read_table("corpus_chunks"), {"c1", "c2", "c3"}),
        )
    b = one(plan_bills(config, ["multipassage_questions"]), "multipassage_questions", "query_writer")
    assert (b.requests, b.cached, b.to_send) == (3, 3, 0)  # the plan's cache keys are the ones the writer used


SAMPLE_STAGES = {  # every LLM stage the sample configuration asks, written out by hand
    "classifier",
    "classifier_reference",
    "rubric_judge",
    "query_writer",
    "judge",
    "reference_judge",
    "query_rewriter",
    "rewrite_gate",
    "answer_grader",
    "system:smollm-closed",
    "system:smollm-rag",
}


def bounds_of(stdout: str) -> dict[tuple[str, str], int]:
    """(asset, stage) -> the bound printed under its block."""
    out, head = {}, None
    for line in stdout.splitlines():
        if " · " in line and not line.startswith(" "):
            head = tuple(line.split(" · ")[:2])
        elif line.startswith("  bound: at most ") and head:
            out[head] = int(line.split()[3].replace(",", ""))
    return out


def test_plan_on_an_empty_data_folder_bounds_every_stage_and_writes_nothing(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    env = {"MAMA_DATA_DIR": str(data)}
    out = subprocess.run(
        [sys.executable, "-m", "mama_pipeline.cli", "plan", "--select", "*", "--rate", "0.5", "--gpus-per-server", "8"],
        env={**os.environ, "MAMA_CONFIG": str(SAMPLE_CONFIG), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert list(data.iterdir()) == []  # no mama.duckdb, no lock, no logs
    bounds = bounds_of(out.stdout)
    assert {stage for _, stage in bounds} == SAMPLE_STAGES
    assert all(n > 0 for n in bounds.values()), bounds
    # the parts the sample configuration fixes: 3 retrievers at pool depth 5 + the seed chunk per query, the
    # audit's 4 queries x ranks 6-10 of 3 retrievers, the pilot of 12, 2 queries x 2 rewrite kinds, one set
    # of at most 3 chunks (its verifier: 3 chunks alone, 3 fact checks, the set)
    queries = bounds[("generated_queries", "query_writer")]
    assert bounds[("judged_labels", "judge")] == queries * 16
    assert bounds[("audit_judgments", "judge")] == 4 * 15
    assert bounds[("reference_judgments", "reference_judge")] == 12
    assert bounds[("query_variants", "query_rewriter")] == bounds[("query_variants", "rewrite_gate")] == 4
    assert bounds[("variant_labels", "judge")] == 2  # robustness.max_hole_pairs
    assert bounds[("multipassage_questions", "query_writer")] == 1
    assert bounds[("multipassage_questions", "judge")] == 7
    assert bounds[("system_answers", "system:smollm-closed")] == 3  # one item per track
    assert bounds[("system_grades", "rubric_judge")] == 6  # one rubric item of at most 6 criteria
    total = sum(bounds.values())
    tokens = sum(
        int(line.split()[4].replace(",", ""))
        for line in out.stdout.splitlines()
        if line.startswith("  prompt tokens: at most ")
    )
    assert (
        f"at most {total:,} requests (18 of 18 stage plans bounded) and {tokens:,} prompt tokens (18 of 18 bounded); "
        in out.stdout
    )
    # at 0.5 requests a second on one server: total / 0.5 s, and 8 GPU-hours per server-hour
    assert f"{total / 0.5 / 3600 * 8:,.1f} GPU-hours at 8 GPUs a server" in out.stdout


def test_the_bound_of_an_adaptive_run_is_its_budget_plus_the_remainder_sample():
    from mama_pipeline.plan._stage_bounds import RawInputs, judged_labels_bound, query_writer_bound

    full = load_settings(SAMPLE_CONFIG)
    queries = query_writer_bound(RawInputs(full), "query_writer").requests
    pool = queries * 16  # the sample: 3 retrievers at pool depth 5 + the seed chunk per query
    assert judged_labels_bound(RawInputs(full), "judge").requests == pool
    for budget, remainder, expected in ((0.25, 5, round(pool / 4) + 5), (3, 10**6, pool)):
        judging = full.judging.model_copy(
            update={"strategy": "adaptive", "budget": budget, "remainder_sample": remainder}
        )
        bound = judged_labels_bound(RawInputs(full.model_copy(update={"judging": judging})), "judge")
        assert bound.requests == expected, bound
        assert bound.basis.startswith("adaptive: budget ")


def test_the_judges_prompt_token_bound_grows_with_the_longest_chunk_at_four_characters_a_token():
    from mama_pipeline.plan._prompt_bounds import prompt_token_bound
    from mama_pipeline.plan._stage_bounds import RawInputs, judged_labels_bound

    raw = RawInputs(load_settings(SAMPLE_CONFIG))
    requests = judged_labels_bound(raw, "judge").requests
    tokens, basis = prompt_token_bound("judged_labels", raw, "judge", requests)
    assert tokens % requests == 0 and "estimate (4 characters a token" in basis, basis
    chunks, sampled = raw._corpus
    longest = max(len(t.strip()) for t in chunks["text"].to_list())
    longer = chunks.with_columns(
        text=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("y" * (longest + 4000))).otherwise("text")
    )
    grown = RawInputs(raw.s)
    grown.__dict__["_corpus"] = (longer, sampled)
    more, _ = prompt_token_bound("judged_labels", grown, "judge", requests)
    assert more == tokens + requests * 1000  # 4,000 more characters in the longest chunk: 1,000 tokens a request


def test_the_longest_texts_found_a_slice_of_chunks_at_a_time_are_the_first_longest(monkeypatch):
    """The bounds' longest texts are found over the bundle's chunks a slice at a time (plan/_prompt_bounds.py
    SLICE_ROWS): one chunk a slice finds the first of the longest, as over the whole table."""
    from mama_pipeline.plan import _prompt_bounds
    from mama_pipeline.plan._stage_bounds import RawInputs

    chunks = CHUNKS.with_columns(
        chunk_id=pl.Series(["c1", "c2-longest", "c3-longest"]),
        text=pl.Series(["a", "  " + "b" * 40 + "  ", "c" * 40]),
        source=pl.Series(["who", "msf-longer", "who"]),
        breadcrumb=pl.Series([["A section of some length"], [], ["x"]]),
    )
    monkeypatch.setattr(_prompt_bounds, "SLICE_ROWS", 1)
    raw = RawInputs(load_settings(SAMPLE_CONFIG))
    raw.__dict__["_corpus"] = (chunks, chunks.head(1))
    texts = _prompt_bounds.LongestTexts(raw)
    assert texts.chunk == ("c2-longest", "  " + "b" * 40 + "  ")
    assert texts.judge_fields == {"source": "msf-longer", "page": "unknown", "chunk": "b" * 40}  # ties: the first
    assert texts.passage == {"source": "msf-longer", "section": "(none)", "text": "  " + "b" * 40 + "  "}


def test_a_prompt_token_bound_whose_input_is_missing_says_why(tmp_path):
    from mama_pipeline.plan._prompt_bounds import prompt_token_bound
    from mama_pipeline.plan._stage_bounds import RawInputs

    s = load_settings(SAMPLE_CONFIG)
    corpus = s.corpus.model_copy(update={"bundle": str(tmp_path / "nowhere.txt")})
    raw = RawInputs(s.model_copy(update={"corpus": corpus}))
    tokens, basis = prompt_token_bound("generated_queries", raw, "query_writer", 28)
    assert tokens is None and basis == f"not computed: corpus bundle {tmp_path / 'nowhere.txt'} does not exist"
    assert prompt_token_bound("judged_labels", raw, "judge", None) == (
        None,
        "not computed: the requests are not bounded",
    )


def test_the_plan_asset_depends_on_every_table_its_planners_read():
    """``llm_plan`` runs when what it reads of the store may have changed, and only then: every table the planners
    name (an LLM stage's input, or an LLM-calling asset, whose answers fill the cache) is one of its inputs."""
    import re

    from mama_pipeline.common.sql_contracts import contract_files
    from mama_pipeline.definitions import defs
    from mama_pipeline.plan import _planners

    named = set(re.findall(r"[\"']([a-z0-9_]+)[\"']", Path(_planners.__file__).read_text())) & set(contract_files())
    assert {"pooled_pairs", "rankings", "variant_rankings", "system_answers", "multipassage_pool"} <= named
    inputs = {k.to_user_string() for k in defs.resolve_asset_graph().get(dg.AssetKey("llm_plan")).parent_keys}
    assert named <= inputs
    assert "judged_set" in inputs  # adaptive judging sends its judge requests there
    assert not {"scoreboard", "mamaretrieval_leaderboard", "evaluation_report"} & inputs  # no LLM stage reads them


def test_a_planner_reads_each_stored_table_once_gets_what_the_store_holds_and_lets_it_go(tmp_path, monkeypatch):
    from mama_pipeline.plan._planners import Inputs, NotBuilt

    store = Store(tmp_path / "mama.duckdb")
    store.write_table("planned_input", CHUNKS)
    store.write_table("planned_parts", CHUNKS.head(2), partition="a")
    reads = []
    read_table = Store.read_table
    monkeypatch.setattr(
        Store, "read_table", lambda self, name, **kw: reads.append(name) or read_table(self, name, **kw)
    )
    inp = Inputs(load_settings(SAMPLE_CONFIG), store)
    for _ in range(3):
        assert inp.table("planned_input").equals(CHUNKS)
        assert inp.table("planned_parts", partition="a").equals(CHUNKS.head(2))
        with pytest.raises(NotBuilt, match=r"planned_parts\[b\]"):
            inp.table("planned_parts", partition="b")
        with pytest.raises(NotBuilt, match="^never_written$"):
            inp.table("never_written")
    assert sorted(reads) == ["never_written"] * 3 + ["planned_input", "planned_parts", "planned_parts"]
    some = inp.table("planned_input", columns=("chunk_id", "text"), where=("source", ("who",)))
    assert some.equals(CHUNKS.filter(pl.col("source") == "who").select("chunk_id", "text"))
    inp.release()  # the next planner's reads are its own
    assert inp.table("planned_input").equals(CHUNKS) and reads.count("planned_input") == 3
