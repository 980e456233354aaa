"""The in-process runner (a line per step, events to a file) and the end-of-run summary."""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from mama_pipeline.demo import _summary as summary
from mama_pipeline.demo._runner import RunTally, failed_steps_of_run, run_in_process
from mama_pipeline.settings import SAMPLE_CONFIG, load_settings
from mama_pipeline.store import Store

SHARDS = dg.StaticPartitionsDefinition(["s0", "s1"])


@dg.asset(group_name="alpha")
def first() -> int:
    dg.AssetExecutionContext.get().log.info("first says hello")
    return 1


@dg.asset(group_name="alpha")
def second(first: int) -> int:
    return first + 1


@dg.asset(group_name="beta", partitions_def=SHARDS, deps=[second])
def sharded() -> None:
    print("a library printing to stdout")


@dg.asset_check(asset=second)
def second_is_two(second: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=second == 2)


@dg.asset(group_name="beta", deps=[sharded])
def broken() -> None:
    raise RuntimeError("boom")


DEFS = dg.Definitions(
    assets=[first, second, sharded, broken], asset_checks=[second_is_two], resources={"io_manager": dg.mem_io_manager}
)


def test_one_line_per_step_in_the_terminal_and_events_in_the_log(tmp_path, capfd):
    log = tmp_path / "logs" / "run.log"
    keys = {dg.AssetKey("first"), dg.AssetKey("second"), dg.AssetKey("sharded")}
    with dg.instance_for_test() as instance:
        tally = run_in_process(DEFS, keys, instance, log)
        runs = instance.get_runs()
    out = capfd.readouterr().out
    assert not tally.failed and tally.runs == 3 and len(runs) == 3  # one run, then one per shard
    lines = [line for line in out.splitlines() if " ok " in line]
    assert [line.split()[2] for line in lines] == ["first", "second", "second_second_is_two", "sharded", "sharded"]
    assert "[s0]" in lines[3] and "[s1]" in lines[4]
    assert tally.materializations == 4 and tally.checks_passed == 1 and tally.checks_failed == []
    text = log.read_text()
    assert "first says hello" in text and "STEP_SUCCESS" in text and "a library printing to stdout" in text
    assert "STEP_SUCCESS" not in out and "first says hello" not in out  # the firehose stays out of the terminal


def test_a_failed_step_stops_the_runs_and_is_named(tmp_path, capfd):
    with dg.instance_for_test() as instance:
        tally = run_in_process(DEFS, None, instance, tmp_path / "run.log")
    out = capfd.readouterr().out
    assert tally.failed and [s.label for s in tally.steps if not s.ok] == ["broken"]
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "FAILED broken" in " ".join(line.split()))
    assert lines[at + 1].strip() == "RuntimeError: boom"  # the reason, under its line
    text = summary.render(tally, 3.0, {}, {}, Path("db"), Path("log"), "ui")
    assert text.startswith("mama_pipeline FAILED in 3 s") and "failed steps: broken (RuntimeError: boom)" in text


@dg.asset(group_name="gamma")
def refused() -> None:
    raise dg.Failure(description="Label Studio at http://ls:8080 rejected the API token (HTTP 401)\nsee its log")


@dg.asset(group_name="gamma")
def wrapped() -> None:
    try:
        raise KeyError("inner")
    except KeyError as exc:
        raise ValueError("data/x.csv:3: not a number") from exc


def test_every_failed_steps_one_line_reason_is_printed_under_its_line(tmp_path, capfd):
    defs = dg.Definitions(assets=[refused, wrapped], resources={"io_manager": dg.mem_io_manager})
    with dg.instance_for_test() as instance:
        tally = run_in_process(defs, {dg.AssetKey("refused")}, instance, tmp_path / "run.log")
        tally2 = run_in_process(defs, {dg.AssetKey("wrapped")}, instance, tmp_path / "run.log")
        [run_id] = [r.run_id for r in instance.get_runs() if r.asset_selection == {dg.AssetKey("wrapped")}]
        from_instance = failed_steps_of_run(instance, run_id)
    lines = capfd.readouterr().out.splitlines()
    reasons = [lines[i + 1].strip() for i, line in enumerate(lines) if " FAILED " in line]
    assert reasons == [
        "Label Studio at http://ls:8080 rejected the API token (HTTP 401); see its log",
        "ValueError: data/x.csv:3: not a number",
    ]
    assert [s.reason for s in tally.steps + tally2.steps] == reasons
    # the multiprocess path reads the same reasons back from the instance
    assert from_instance == ["FAILED wrapped: ValueError: data/x.csv:3: not a number"]


def test_the_summary_claims_only_what_this_run_materialised(tmp_path, monkeypatch):
    store = Store(tmp_path / "mama.duckdb")
    monkeypatch.setitem(summary.AREA_LINES, "alpha", lambda ctx: ["2 things in the alpha tables"])
    with dg.instance_for_test() as instance:
        run_in_process(DEFS, {dg.AssetKey("first"), dg.AssetKey("second")}, instance, tmp_path / "run.log")
        second_run = datetime.now(UTC).replace(tzinfo=None)
        run_in_process(DEFS, None, instance, tmp_path / "run.log")  # first, second again; sharded; broken fails
        areas = summary.area_lines(
            summary.SummaryContext(None, store, instance, DEFS.resolve_asset_graph(), second_run)
        )
        idle_run = datetime.now(UTC).replace(tzinfo=None)  # a third run that materialised nothing
        idle = summary.area_lines(summary.SummaryContext(None, store, instance, DEFS.resolve_asset_graph(), idle_run))
    assert areas["alpha"] == ["2 things in the alpha tables"]
    assert areas["beta"] == ["1 of 2 assets materialised this run: sharded"]  # broken failed: not claimed
    assert idle["alpha"] == [
        "(not materialised this run; the store holds an earlier run's) 2 things in the alpha tables"
    ]
    assert idle["beta"] == ["0 of 2 assets materialised this run; 1 from earlier runs"]


def test_summary_lines_from_the_store_and_the_groups(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    with store.connect(write=True) as con:  # just the columns the summary reads
        con.execute(
            "CREATE TABLE sampled_chunks AS SELECT * FROM (VALUES ('c1', 'high'), ('c2', 'low')) t(chunk_id, tier)"
        )
        con.execute("CREATE TABLE corpus_chunks AS SELECT * FROM (VALUES ('c1'), ('c2'), ('c3')) t(chunk_id)")
    with dg.instance_for_test() as instance:
        run_in_process(DEFS, {dg.AssetKey("first"), dg.AssetKey("second")}, instance, tmp_path / "run.log")
        ctx = summary.SummaryContext(None, store, instance, DEFS.resolve_asset_graph(), datetime(2020, 1, 1))
        areas = summary.area_lines(ctx)
    assert areas["corpus"] == ["3 chunks in the bundle, 2 sampled (high 1, low 1), 0 rejected by the sampling rules"]
    # groups nobody summarises: what was materialised of them
    assert areas["alpha"] == ["2 of 2 assets materialised this run: first, second"]
    assert areas["beta"] == ["0 of 2 assets materialised this run"]
    text = summary.render(
        RunTally(runs=1),
        1.0,
        areas,
        {"report evaluation": Path("r.html")},
        Path("m.duckdb"),
        Path("m.log"),
        summary.ui_command(Path("/h"), Path("/c.yaml")),
    )
    assert "report evaluation: r.html" in text
    assert "DAGSTER_HOME=/h MAMA_CONFIG=/c.yaml .venv/bin/dagster dev -w workspace.yaml" in text


def test_llm_line_counts_this_runs_requests_and_says_when_the_answers_are_the_smoke_test_models(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    with store.connect(write=True) as con:  # just the columns the summary reads
        con.execute(
            "CREATE TABLE llm_responses AS SELECT * FROM (VALUES "
            "('judge', 'smollm', 'embedded:m.gguf:1', 49, 1.0, TIMESTAMP '2019-06-01'), "
            "('judge', 'smollm', 'embedded:m.gguf:1', 49, 1.0, TIMESTAMP '2021-06-01'), "
            "('classifier', 'smollm', 'embedded:m.gguf:1', 60, 2.0, TIMESTAMP '2021-06-01')"
            ") t(stage, model, endpoint, completion_tokens, latency_s, created_at)"
        )
    ctx = summary.SummaryContext(load_settings(SAMPLE_CONFIG), store, None, None, datetime(2020, 1, 1))
    lines = summary.llm_lines(ctx)
    assert lines[0] == "2 requests answered this run (classifier 1, judge 1); model smollm"
    assert lines[1].startswith(
        "EMBEDDED MODEL: the store holds answers of the embedded SmolLM2-135M smoke-test model (classifier 1, "
        "judge 2; embedded: true in this configuration: llm.classifier, llm.classifier_reference, llm.query_writer, "
    )
    assert "systems.entries.1)" in lines[1] and "not meaningful" in lines[1]
    with store.connect(write=True) as con:  # answers from a real endpoint: no note
        con.execute("UPDATE llm_responses SET endpoint = 'http://judge:8000/v1'")
    assert summary.llm_lines(ctx) == ["2 requests answered this run (classifier 1, judge 1); model smollm"]


@dg.asset_check(asset=second)
def second_is_three(second: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=second == 3, severity=dg.AssetCheckSeverity.WARN)


def test_a_failed_warning_check_is_a_warning_not_a_failure(tmp_path, capfd):
    defs = dg.Definitions(
        assets=[first, second],
        asset_checks=[second_is_two, second_is_three],
        resources={"io_manager": dg.mem_io_manager},
    )
    with dg.instance_for_test() as instance:
        tally = run_in_process(defs, None, instance, tmp_path / "run.log")
    assert not tally.failed and tally.checks_passed == 1 and tally.checks_failed == []
    assert tally.checks_warned == ["second:second_is_three"]
    text = summary.render(tally, 1.0, {}, {}, Path("m.duckdb"), Path("m.log"), "ui")
    assert "1 checks passed, 0 failed, 1 warnings" in text and "failed checks" not in text
    assert "warnings (checks that list what went wrong" in text and "second:second_is_three" in text


def test_a_failed_leaf_leaves_the_other_branch_materialised_and_the_summary_names_what_it_skipped(tmp_path, capfd):
    from mama_pipeline_tests.release.branch_failure_defs import defs

    with dg.instance_for_test() as instance:
        tally = run_in_process(defs, None, instance, tmp_path / "run.log")
        made = {
            (k.to_user_string(), r.partition_key)
            for k in instance.get_asset_keys()
            for r in instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=k), limit=10).records
        }
    out = capfd.readouterr().out
    assert tally.failed and tally.runs == 6
    assert made == {("root", None), ("a_fails", "s0"), ("b_branch", "bm25"), ("b_branch", "dense"), ("b_end", None)}
    assert tally.skipped == [
        "a_after: depends on a_fails, not materialised by a failed run",
        "z_joint: depends on a_fails, not materialised by a failed run",
    ]
    assert "skipped a_after: depends on a_fails" in out
    text = summary.render(tally, 1.0, {}, {}, Path("db"), Path("log"), "ui")
    assert "failed steps: a_fails [s1] (RuntimeError: injected fault in shard s1)" in text
    assert "skipped because of a failure: a_after: depends on a_fails" in text and "; z_joint: depends" in text
