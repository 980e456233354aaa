"""Endpoint outages, error bodies and parse-failure re-asks, against the fault-injecting server."""

from __future__ import annotations

import threading
import time

import pytest

from mama_pipeline.llm.client import RETRY_PARSE_FAILED_ENV, LLMRequest
from mama_pipeline_tests.foundation.test_llm_client import TEMPLATE, Verdict, ask
from mama_pipeline_tests.support.fake_llm_server import running_server

OUTAGE = dict(max_retries=0, backoff_base_s=0.05, backoff_max_s=0.5, concurrency=4)


def requests(n: int, tag: str) -> list[LLMRequest]:
    return [LLMRequest(f"{tag}{i}", TEMPLATE.render(text=f"{tag} {i}")) for i in range(n)]


def outage_after(server, answered: int, down_s: float) -> threading.Thread:
    """Stop ``server`` once it has answered ``answered`` calls, restart it ``down_s`` later."""

    def run() -> None:
        while server.stats()["chat_calls"] < answered:
            time.sleep(0.02)
        server.stop()
        time.sleep(down_s)
        server.start()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_outage_within_the_patience_fails_no_request_and_is_logged(make_client):
    lines: list[str] = []
    with running_server(delay=0.02) as server:
        client = make_client(urls=[server.url], endpoint_patience_s=60, **OUTAGE)
        client._log = lines.append
        outage = outage_after(server, answered=40, down_s=4.0)
        report = client.run(TEMPLATE, Verdict, requests(400, "o"))
        outage.join(30)
    assert not report.failures and len(report.results) == 400  # max_retries=0: without the patience they would fail
    down = [line for line in lines if f"endpoint {server.url} is down" in line]
    up = [line for line in lines if f"endpoint {server.url} is up again after" in line]
    assert len(down) == 1 and len(up) == 1, lines
    seconds = float(up[0].split("after ")[1].split(" s")[0])
    assert 3.5 <= seconds < 30
    (outage_seen,) = report.outages
    assert outage_seen.recovered and outage_seen.down_s == pytest.approx(seconds, abs=0.2)
    meta = report.metadata()
    assert meta["judge/endpoint_outages"] == 1 and "(recovered)" in meta["judge/endpoint_down"]


def test_requests_fail_only_when_the_patience_is_exhausted(make_client):
    lines: list[str] = []
    with running_server() as server:
        client = make_client(urls=[server.url], endpoint_patience_s=1.5, **OUTAGE)
        client._log = lines.append
        server.stop()
        t0 = time.perf_counter()
        report = client.run(TEMPLATE, Verdict, requests(20, "x"))
        wall = time.perf_counter() - t0
    assert len(report.failures) == 20 and {r.status for r in report.results} == {"transport_failed"}
    assert all("every endpoint is down and was given up" in r.error and "after" in r.error for r in report.results)
    assert 1.5 <= wall < 15
    assert any("patience (1.5 s) exhausted, given up for this run" in line for line in lines), lines


def test_traffic_moves_to_the_base_urls_still_up(make_client):
    lines: list[str] = []
    with running_server() as up, running_server() as down:
        client = make_client(urls=[up.url, down.url], endpoint_patience_s=60, **OUTAGE)
        client._log = lines.append
        down.stop()
        report = client.run(TEMPLATE, Verdict, requests(60, "m"))
        assert not report.failures and up.stats()["chat_calls"] == 60
    assert any(f"endpoint {down.url} is down" in line and f"traffic moves to {up.url}" in line for line in lines)
    assert [o.outcome for o in report.outages] == ["still down when the run ended"]


def test_an_error_object_in_an_http_200_is_a_transport_failure_retried_and_never_cached(make_client, fake_llm, store):
    report = ask(make_client(max_retries=2), "[[fault:errorbodyx1]] e1")
    assert report.results[0].ok and report.results[0].attempts == 2
    report = ask(make_client(max_retries=1), "[[fault:errorbody]] e2")
    (res,) = report.results
    assert res.status == "transport_failed" and "HTTP 200 with an error body" in res.error
    assert "injected error in a 200 body" in res.error
    statuses = store.query("select status from llm_responses order by status")["status"].to_list()
    assert statuses == ["ok"]  # the error body is not an answer: nothing cached for e2


@pytest.mark.parametrize("how", ["setting", "environment"])
def test_parse_failures_are_reasked_when_asked_to(make_client, fake_llm, store, monkeypatch, how):
    text = f"[[fault:malformedx1]] reask-{how}"
    first = ask(make_client(parse_retries=0), text)
    assert first.results[0].status == "parse_failed"
    again = ask(make_client(parse_retries=0), text)  # served from the cache: still failed, nothing asked
    assert again.calls == 0 and again.results[0].status == "parse_failed"
    if how == "setting":
        client = make_client(parse_retries=0, retry_parse_failed=True)
    else:
        monkeypatch.setenv(RETRY_PARSE_FAILED_ENV, "1")
        client = make_client(parse_retries=0)
    reasked = ask(client, text)
    assert reasked.calls == 1 and reasked.results[0].ok
    rows = store.query("select status from llm_responses")["status"].to_list()
    assert rows == ["ok"]  # the parse failure was replaced by the answer
    monkeypatch.delenv(RETRY_PARSE_FAILED_ENV, raising=False)
    assert ask(make_client(parse_retries=0), text).results[0].ok


def test_the_command_option_makes_the_runs_reask_parse_failures(monkeypatch):
    import os

    from mama_pipeline import cli

    seen: list[tuple[str, str | None, bool, bool]] = []
    monkeypatch.setenv(RETRY_PARSE_FAILED_ENV, "0")  # recorded, so the variable the command sets is undone afterwards
    monkeypatch.delenv(RETRY_PARSE_FAILED_ENV)
    monkeypatch.setattr(
        cli,
        "materialize",
        lambda select, executor="multiprocess", run_config=None, everything=False, retry_parse_failed=False: (
            seen.append((select, os.environ.get(RETRY_PARSE_FAILED_ENV), retry_parse_failed, everything)) or 0
        ),
    )
    assert cli.main(["materialize", "--select", "judged_labels"]) == 0
    assert cli.main(["materialize", "--select", "judged_labels", "--retry-parse-failed", "--all"]) == 0
    # the planner is told too, so that a stage holding unparseable answers runs though nothing else changed
    assert seen == [("judged_labels", None, False, False), ("judged_labels", "1", True, True)]
