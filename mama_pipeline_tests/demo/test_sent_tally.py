"""Planned against sent: the requests each stage sent since a run started (real DuckDB store), the summary's
lines, and the run tags that carry both."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg

from mama_pipeline.demo._sent_tally import (
    PLANNED_TAG,
    SENT_TAG,
    planned_bounds,
    planned_sent_lines,
    sent_since,
    tag_runs,
)
from mama_pipeline.store import Store


def test_sent_counts_each_request_once_answers_and_transport_failures_since_the_start(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    from mama_pipeline.llm.answer_log import fold
    from mama_pipeline_tests.foundation.test_answer_log import row

    def answer(key: str, stage: str, status: str, created_at: str) -> dict:
        return {**row(key, "r", created_at), "stage": stage, "status": status}

    # the client's writes, a fold each: an answer asked again replaces its row
    fold(store, [answer("k1", "judge", "ok", "2019-06-01 00:00:00.000000")])  # before the run: not sent by it
    fold(store, [answer("k2", "judge", "parse_failed", "2021-06-01 00:00:00.000000")])
    fold(store, [answer("k2", "judge", "ok", "2021-06-02 00:00:00.000000")])  # re-asked after a parse failure
    fold(store, [answer("k3", "classifier", "ok", "2021-06-01 00:00:00.000000")])
    for day in (1, 2):  # one request failing on two runs' attempts: one request
        fold(store, [], [("k4", "judge", "i", "timeout", 3, f"2021-06-0{day} 00:00:00.000000")])
    assert sent_since(store, datetime(2020, 1, 1)) == {"judge": 2, "classifier": 1}
    assert sent_since(Store(tmp_path / "none" / "mama.duckdb"), datetime(2020, 1, 1)) == {}
    assert not (tmp_path / "none").exists()  # nothing sent, nothing created


def test_the_summary_lines_say_sent_against_the_bound_and_flag_a_bound_that_did_not_hold():
    lines = planned_sent_lines({"judge": 448, "classifier": 10}, [], {"judge": 300, "classifier": 11})
    assert lines == [
        "requests sent this run / planned bound, per stage: classifier 11/10, judge 300/448",
        "SENT MORE THAN THE BOUND (a bound that does not hold: report it): classifier",
    ]
    lines = planned_sent_lines({}, ["system_answers · system:x: bound not computed: no file"], {"system:x": 2})
    assert lines == [
        "requests sent this run / planned bound, per stage: system:x 2/?",
        "no bound: system_answers · system:x: bound not computed: no file",
    ]
    assert planned_sent_lines({}, [], {}) == []


def test_every_run_since_the_start_carries_the_planned_and_sent_figures():
    @dg.asset
    def one() -> None:
        pass

    with dg.instance_for_test() as instance:
        dg.materialize([one], instance=instance)
        start = datetime.now(UTC).replace(tzinfo=None)
        dg.materialize([one], instance=instance)
        dg.materialize([one], instance=instance)
        assert tag_runs(instance, start, {"judge": 448}, {"judge": 300}) == 2
        tagged = [r for r in instance.get_runs() if PLANNED_TAG in r.tags]
        assert len(tagged) == 2 and len(instance.get_runs()) == 3
        assert json.loads(tagged[0].tags[PLANNED_TAG]) == {"judge": 448}
        assert json.loads(tagged[0].tags[SENT_TAG]) == {"judge": 300}


def test_the_bounds_made_in_a_process_of_their_own_are_the_plans_bounds_summed_per_stage(monkeypatch):
    """The command's bounds come from a child process: the raw inputs they read are not read here (and are let
    go with it)."""
    from mama_pipeline.plan import plan_bills
    from mama_pipeline.plan._stage_bounds import RawInputs
    from mama_pipeline.settings import SAMPLE_CONFIG

    assets = ["generated_queries", "judged_labels", "audit_judgments", "system_answers"]
    bills = plan_bills(str(SAMPLE_CONFIG), assets, exact=False)
    expected: dict[str, int] = {}
    for b in bills:
        if b.bound is not None:
            expected[b.stage] = expected.get(b.stage, 0) + b.bound

    def read_here(self):
        raise AssertionError("the corpus bundle was read in the command's process")

    monkeypatch.setattr(RawInputs, "_corpus", property(read_here))
    bounds, unbounded = planned_bounds(str(SAMPLE_CONFIG), assets)
    assert bounds == expected and bounds["judge"] > bounds["query_writer"] > 0
    assert unbounded == [f"{b.asset} · {b.stage}: {b.bound_basis}" for b in bills if b.bound is None]
