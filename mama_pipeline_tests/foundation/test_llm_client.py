"""The shared LLM client against a real local HTTP server that injects faults."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel, Field

from mama_pipeline.llm.client import LLMRequest
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline_tests.support.fake_llm_server import running_server


class Verdict(BaseModel):
    reasoning: str
    label: int = Field(ge=0, le=2)


TEMPLATE = PromptTemplate(id="unit", system="You label things.", user="Label this: {text}")


def ask(client, *texts: str, template: PromptTemplate = TEMPLATE):
    reqs = [LLMRequest(item_id=f"i{n}", messages=template.render(text=t)) for n, t in enumerate(texts)]
    return client.run(template, Verdict, reqs)


def calls_during(server, fn):
    before = server.stats()["chat_calls"]
    out = fn()
    return out, server.stats()["chat_calls"] - before


def test_plain_answer_is_validated_and_cached(make_client, fake_llm, store):
    report, calls = calls_during(fake_llm, lambda: ask(make_client(), "plain-1"))
    assert calls == 1 and report.calls == 1
    (res,) = report.results
    assert res.ok and res.item_id == "i0" and set(res.value) == {"reasoning", "label"}
    assert res.reasoning == res.value["reasoning"]  # reasoning taken from the JSON field
    again, calls = calls_during(fake_llm, lambda: ask(make_client(), "plain-1"))
    assert calls == 0 and again.calls == 0 and again.results[0].from_cache
    assert again.results[0].value == res.value
    assert store.query("select count(*) n from llm_responses")["n"][0] == 1


def test_http_500_is_retried_then_cached(make_client, fake_llm):
    report, calls = calls_during(fake_llm, lambda: ask(make_client(), "[[fault:500x2]] a"))
    assert calls == 3 and report.results[0].ok and report.results[0].attempts == 3
    _, calls = calls_during(fake_llm, lambda: ask(make_client(), "[[fault:500x2]] a"))
    assert calls == 0


def test_http_500_past_retry_budget_is_a_recorded_transport_failure(make_client, fake_llm, store):
    client = make_client(max_retries=2)
    report, calls = calls_during(fake_llm, lambda: ask(client, "[[fault:500]] b"))
    (res,) = report.failures
    assert calls == 3 and res.status == "transport_failed" and res.value is None and "HTTP 500" in res.error
    logged = store.query("select item_id, attempts from llm_failures")
    assert logged.rows() == [("i0", 3)]
    # transport failures are not final: the next run asks again
    _, calls = calls_during(fake_llm, lambda: ask(client, "[[fault:500]] b"))
    assert calls == 3


def test_429_honours_retry_after(make_client, fake_llm):
    t0 = time.perf_counter()
    report, calls = calls_during(fake_llm, lambda: ask(make_client(), "[[fault:429x1:retry_after=1]] c"))
    assert time.perf_counter() - t0 >= 1.0
    assert calls == 2 and report.results[0].ok


def test_slow_answer_past_timeout_is_retried(make_client, fake_llm):
    client = make_client(timeout_s=0.5)
    report, calls = calls_during(fake_llm, lambda: ask(client, "[[fault:slow=2x1]] d"))
    assert calls == 2 and report.results[0].ok
    report, calls = calls_during(fake_llm, lambda: ask(make_client(timeout_s=0.3, max_retries=1), "[[fault:slow=1]] e"))
    assert calls == 2 and report.results[0].status == "transport_failed" and "Timeout" in report.results[0].error


def test_malformed_json_is_reasked_then_recorded_as_failed_never_defaulted(make_client, fake_llm, store):
    report, calls = calls_during(fake_llm, lambda: ask(make_client(parse_retries=2), "[[fault:malformed]] f"))
    (res,) = report.results
    assert calls == 3 and res.status == "parse_failed" and res.value is None
    assert res.raw_text == '{"reasoning": "cut off' and "not JSON" in res.error
    assert report.failures == [res]
    row = store.query("select status, raw_text, parsed_json from llm_responses").row(0)
    assert row == ("parse_failed", '{"reasoning": "cut off', None)
    # a parse failure is final for this exact request: no new call, still failed
    again, calls = calls_during(fake_llm, lambda: ask(make_client(parse_retries=2), "[[fault:malformed]] f"))
    assert calls == 0 and again.results[0].status == "parse_failed" and again.results[0].value is None


def test_schema_violation_is_reasked(make_client, fake_llm):
    report, calls = calls_during(fake_llm, lambda: ask(make_client(parse_retries=1), "[[fault:schemax1]] g"))
    assert calls == 2 and report.results[0].ok
    report, calls = calls_during(fake_llm, lambda: ask(make_client(parse_retries=1), "[[fault:schema]] h"))
    assert (
        calls == 2 and report.results[0].status == "parse_failed" and "violates the schema" in report.results[0].error
    )


def test_cache_key_covers_template_and_model_not_runtime_knobs(make_client, fake_llm):
    ask(make_client(), "k1")
    _, calls = calls_during(fake_llm, lambda: ask(make_client(concurrency=3, timeout_s=9, max_retries=7), "k1"))
    assert calls == 0
    edited = PromptTemplate(id="unit", system="You label things carefully.", user="Label this: {text}")
    _, calls = calls_during(fake_llm, lambda: ask(make_client(), "k1", template=edited))
    assert calls == 1
    _, calls = calls_during(fake_llm, lambda: ask(make_client(model="other-model"), "k1"))
    assert calls == 1
    _, calls = calls_during(fake_llm, lambda: ask(make_client(temperature=0.7), "k1"))
    assert calls == 1


def test_duplicate_requests_in_one_run_are_asked_once(make_client, fake_llm):
    report, calls = calls_during(fake_llm, lambda: ask(make_client(), "dup", "dup", "dup"))
    assert calls == 1 and [r.item_id for r in report.results] == ["i0", "i1", "i2"]
    assert len({r.cache_key for r in report.results}) == 1


def test_requests_spread_over_several_base_urls(make_client):
    with running_server(delay=0.05) as a, running_server(delay=0.05) as b:
        report = ask(make_client(urls=[a.url, b.url], concurrency=2), *[f"spread {i}" for i in range(20)])
        assert all(r.ok for r in report.results)
        assert a.stats()["chat_calls"] > 0 and b.stats()["chat_calls"] > 0
        assert a.stats()["chat_calls"] + b.stats()["chat_calls"] == 20


def test_server_side_reasoning_channel_is_captured(make_client, fake_llm):
    class Bare(BaseModel):
        label: int

    tpl = PromptTemplate(id="bare", system="s", user="{text}")
    report = make_client(reasoning="server").run(
        tpl, Bare, [LLMRequest("x", tpl.render(text="r [[reasoning]]")), LLMRequest("y", tpl.render(text="none"))]
    )
    with_channel, without = report.results
    assert with_channel.ok and with_channel.reasoning == "server-side reasoning before the verdict"
    assert without.ok and without.reasoning is None
    meta = report.metadata()
    assert meta["judge/http_calls"] == 2 and meta["judge/ok"] == 2 and meta["judge/prompt_tokens_new"] > 0


@pytest.mark.parametrize("n", [40])
def test_bounded_concurrency_and_batched_persistence(make_client, fake_llm, store, n):
    report = ask(make_client(concurrency=4), *[f"batch {i}" for i in range(n)])
    assert len(report.results) == n and not report.failures
    assert store.query("select count(*) n from llm_responses where stage='judge'")["n"][0] == n


def test_cache_keys_written_from_shared_parts_equal_the_hash_of_the_whole_canonical_request():
    import hashlib
    import json

    from mama_pipeline.llm.client import cache_key, cache_keys

    decoding = {"temperature": 0.0, "top_p": None, "max_tokens": 512, "seed": 7, "extra_body": {"b": 1, "a": [2]},
                "reasoning": "json_field"}  # fmt: skip
    schema = {"type": "object", "properties": {"z": {"type": "string"}, "a": {"enum": ["é", '"q"']}}}
    system = {"role": "system", "content": "You label things.\t\u2028 é"}
    messages = [
        [{"role": "system", "content": "You label things."}, {"role": "user", "content": 'Label: naïve\nline "2"'}],
        [{"content": "only one", "role": "user"}],
        [],
        [system, {"role": "user", "content": "a"}],  # two opening with one system message: its hash reused
        [system, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}],
        [system],
        [{"role": "system", "content": "You label things.\t\u2028 é", "name": "x"}, {"role": "user", "content": "a"}],
        [{"role": "user", "content": [{"type": "text", "text": "parts"}]}, system],  # not text; system not first
    ]
    whole = [
        hashlib.sha256(
            json.dumps(
                {"endpoint": "http://h:1/v1", "model": "m/ü", "template": ["unit", TEMPLATE.hash], "messages": m,
                 "decoding": decoding, "schema": schema},
                sort_keys=True, ensure_ascii=False, separators=(",", ":"),
            ).encode()
        ).hexdigest()
        for m in messages
    ]  # fmt: skip
    assert cache_keys("http://h:1/v1", "m/ü", TEMPLATE, messages, decoding, schema) == whole
    assert [cache_key("http://h:1/v1", "m/ü", TEMPLATE, m, decoding, schema) for m in messages] == whole


def batches_of(*sizes: int, start: int = 0):
    """(tag, requests, None) for run_ahead: batch b holds ``sizes[b]`` requests, texts numbered from ``start``."""
    n, out = start, []
    for b, size in enumerate(sizes):
        reqs = [LLMRequest(item_id=f"i{n + k}", messages=TEMPLATE.render(text=f"ahead {n + k}")) for k in range(size)]
        out.append((b, reqs, None))
        n += size
    return out


def test_run_ahead_asks_the_next_batch_while_the_caller_stores_one_and_no_further(make_client, fake_llm):
    """While the caller holds batch 0 the next batch is asked, and only it: as many requests wait behind the batch
    handed over as it has. A client run per batch would have asked 4 by then."""
    seen, before = [], fake_llm.stats()["chat_calls"]
    for tag, report in make_client().run_ahead(TEMPLATE, Verdict, batches_of(4, 4, 4, 4)):
        if tag == 0:
            time.sleep(0.5)  # the caller storing batch 0: the fake server answers batch 1 meanwhile
            seen.append(fake_llm.stats()["chat_calls"] - before)
        assert [r.item_id for r in report.results] == [f"i{4 * tag + k}" for k in range(4)]
        assert report.calls == 4 and not report.failures
    assert seen == [8] and fake_llm.stats()["chat_calls"] - before == 16


@pytest.mark.parametrize("expected", [16, None])
def test_run_ahead_progress_lines_count_what_the_caller_expects_or_say_it_is_so_far(make_client, fake_llm, expected):
    """While batch 0 is held only 8 requests have been sent: told 16 are expected the lines count to 16 and estimate
    the time left; not told, they count what was sent so far and estimate nothing. The last line counts all 16."""
    client, lines = make_client(), []
    client._log, client.progress_every_s = lines.append, 0.05
    for tag, _ in client.run_ahead(TEMPLATE, Verdict, batches_of(4, 4, 4, 4), expected):
        if tag == 0:
            time.sleep(0.5)  # the reporter writes lines while 8 requests are out
    held = [line for line in lines[:-1] if line.startswith("judge: 8/")]
    assert held, lines
    if expected:
        assert all(line.startswith("judge: 8/16 answered (0 failed), ") and " left" in line for line in held)
    else:
        assert all("answered (0 failed) of those asked so far" in line and "est." not in line for line in held)
        assert all(line.startswith("judge: 8/8 ") for line in held)
    assert lines[-1].startswith("judge: 16/16 answered (0 failed), ") and lines[-1].endswith("est. 0s left")


def test_run_ahead_gives_every_batch_in_order_with_cached_answers_and_empty_batches(make_client, fake_llm, store):
    client = make_client()
    first = client.run(TEMPLATE, Verdict, batches_of(3)[0][1][:2])  # i0, i1 cached before
    batches = batches_of(3, 0, 2)
    looked_up = client.look_up(TEMPLATE, Verdict, [batches[2][1]])  # the third batch's keys read beforehand
    batches[2] = (2, batches[2][1], (looked_up[0][0], looked_up[1]))
    before = fake_llm.stats()["chat_calls"]
    got = list(client.run_ahead(TEMPLATE, Verdict, batches))
    assert [tag for tag, _ in got] == [0, 1, 2] and fake_llm.stats()["chat_calls"] - before == 3
    (_, a), (_, empty), (_, c) = got
    assert [r.item_id for r in a.results] == ["i0", "i1", "i2"] and [r.from_cache for r in a.results] == [1, 1, 0]
    assert [r.value for r in a.results[:2]] == [r.value for r in first.results]
    assert empty.results == [] and empty.calls == 0
    assert [r.item_id for r in c.results] == ["i3", "i4"] and c.calls == 2 and not c.cache_hits
    assert all(r.wall_s >= 0 for _, r in got)
    assert store.query("select count(*) n from llm_responses")["n"][0] == 5  # the last batch's answers: in the cache


def test_run_ahead_stopped_by_its_caller_asks_nothing_more_and_keeps_every_answer(make_client, fake_llm, store):
    """The caller fails on batch 1: the batches queued behind are dropped, what was answered is in the cache and
    the log folder is empty; a second run asks only what was never answered."""
    import threading

    from mama_pipeline.llm.answer_log import log_dir

    client, before = make_client(concurrency=2), fake_llm.stats()["chat_calls"]
    with pytest.raises(RuntimeError, match="storing failed"):
        for tag, _ in client.run_ahead(TEMPLATE, Verdict, batches_of(*[4] * 10)):
            if tag == 1:
                raise RuntimeError("storing failed")
    asked = fake_llm.stats()["chat_calls"] - before
    assert 8 <= asked <= 12  # batches 0 and 1, and at most batch 2 beside them
    assert store.query("select count(*) n from llm_responses")["n"][0] == asked
    assert not list(log_dir(store).glob("*.jsonl"))
    assert not [t for t in threading.enumerate() if t.name == "judge requests"]
    again = list(make_client().run_ahead(TEMPLATE, Verdict, batches_of(*[4] * 10)))
    assert len(again) == 10 and fake_llm.stats()["chat_calls"] - before == 40


def test_run_ahead_fails_its_caller_when_the_answers_cannot_be_stored(make_client, fake_llm, monkeypatch):
    from mama_pipeline.llm import client as client_module

    def full(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(client_module, "fold", full)
    with pytest.raises(OSError, match="disk full"):
        list(make_client().run_ahead(TEMPLATE, Verdict, batches_of(3, 3)))
