"""Planned against sent: the requests each stage sent since a run started (real DuckDB store), the summary's
lines, and the run tags that carry both."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import dagster as dg

from mama_pipeline.demo._sent_tally import PLANNED_TAG, SENT_TAG, planned_sent_lines, sent_since, tag_runs
from mama_pipeline.store import Store


def test_sent_counts_each_request_once_answers_and_transport_failures_since_the_start(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    with store.connect(write=True) as con:  # the columns the tally reads
        con.execute(
            "CREATE TABLE llm_responses AS SELECT * FROM (VALUES "
            "('judge', 'k1', TIMESTAMP '2019-06-01'), "  # before the run: not sent by it
            "('judge', 'k2', TIMESTAMP '2021-06-01'), "
            "('judge', 'k2', TIMESTAMP '2021-06-02'), "  # re-asked after a parse failure: one request
            "('classifier', 'k3', TIMESTAMP '2021-06-01')"
            ") t(stage, cache_key, created_at)"
        )
        con.execute(
            "CREATE TABLE llm_failures AS SELECT * FROM (VALUES ('judge', 'k4', TIMESTAMP '2021-06-01')) "
            "t(stage, cache_key, created_at)"
        )
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
