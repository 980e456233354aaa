"""The answer log: a killed process's answers are folded into the cache, never asked again, never twice."""

from __future__ import annotations

import json
import subprocess
import sys

from mama_pipeline.llm.answer_log import recover
from mama_pipeline.llm.client import LLMClient, LLMRequest, cache_key, decoding_params, schema_of
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline_tests.foundation.test_llm_client import TEMPLATE, Verdict
from mama_pipeline_tests.foundation.test_store import KEYED_CACHE_DDL


def row(key: str, reasoning: str, created_at: str = "2026-01-02 03:04:05.000006") -> dict:
    """A cache row as a log line holds it (the answer {"reasoning": ..., "label": 1})."""
    return {
        "cache_key": key,
        "stage": "judge",
        "endpoint": "e",
        "model": "fake-model",
        "template_id": "unit",
        "template_hash": "h",
        "schema_hash": "s",
        "status": "ok",
        "raw_text": f'{{"reasoning": "{reasoning}", "label": 1}}',
        "reasoning": reasoning,
        "parsed_json": f'{{"label":1,"reasoning":"{reasoning}"}}',
        "error": None,
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "cached_tokens": 0,
        "attempts": 1,
        "latency_s": 0.25,
        "created_at": created_at,
    }


def cached(store) -> dict[str, tuple]:
    with store.connect() as con:
        rows = con.execute("select cache_key, reasoning, created_at from llm_responses").fetchall()
    assert len(rows) == len({r[0] for r in rows}), "a cache key is stored twice"
    return {key: (reasoning, str(created)) for key, reasoning, created in rows}


def test_torn_last_line_is_skipped_and_only_its_request_is_asked(store, fake_llm):
    url = fake_llm.url
    messages: list[str] = []
    client = LLMClient(
        "judge",
        StageSettings(base_urls=[url], model="fake-model"),
        store,
        endpoint="e",
        model="fake-model",
        resolve_urls=lambda: [url],
        log=messages.append,
    )
    reqs = [LLMRequest(f"i{n}", TEMPLATE.render(text=f"torn log {n}")) for n in range(3)]
    keys = [
        cache_key("e", "fake-model", TEMPLATE, r.messages, decoding_params(client.s), schema_of(Verdict)) for r in reqs
    ]
    folder = store.path.parent / "mama.duckdb.answers"
    folder.mkdir()
    torn = json.dumps(row(keys[2], "cut"))[:60]  # the kill came in the middle of the third line
    name = "20260102T030405000006-4242-0a1b2c3d.jsonl"
    (folder / name).write_text(
        json.dumps(row(keys[0], "logged a")) + "\n" + json.dumps(row(keys[1], "logged b")) + "\n" + torn
    )

    before = fake_llm.stats()["chat_calls"]
    report = client.run(TEMPLATE, Verdict, reqs)
    assert fake_llm.stats()["chat_calls"] - before == 1  # the torn answer only
    first, second, third = report.results
    assert first.from_cache and first.value == {"label": 1, "reasoning": "logged a"}
    assert second.from_cache and second.value == {"label": 1, "reasoning": "logged b"}
    assert not third.from_cache and third.ok
    stored = cached(store)
    assert set(stored) == set(keys)
    assert stored[keys[0]] == ("logged a", "2026-01-02 03:04:05.000006")  # the log's row, as it was written
    assert not list(folder.iterdir())  # folded and deleted; the run's own log too
    assert f"judge: {folder / name}:3: torn last line (60 bytes) skipped" in messages
    assert f"judge: 2 answers of a killed run recovered from {name}" in messages


LIVE_WRITER = """
import json, sys
from pathlib import Path
from mama_pipeline.llm.answer_log import AnswerLog
AnswerLog(Path(sys.argv[1])).append([json.loads(sys.argv[2])])
print("written", flush=True)
sys.stdin.read()
"""


def test_a_live_process_log_is_left_alone_and_folded_once_it_is_killed(store):
    folder = store.path.parent / "mama.duckdb.answers"
    proc = subprocess.Popen(
        [sys.executable, "-c", LIVE_WRITER, str(folder), json.dumps(row("k-live", "live"))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline() == "written\n"
        (name,) = [p.name for p in folder.iterdir()]
        assert recover(store) == []  # its process holds the lock: not touched
        assert [p.name for p in folder.iterdir()] == [name] and not store.path.exists()
    finally:
        proc.kill()
        proc.wait()
    assert recover(store) == [f"1 answers of a killed run recovered from {name}"]
    assert cached(store) == {"k-live": ("live", "2026-01-02 03:04:05.000006")}
    assert not list(folder.iterdir())
    assert recover(store) == []  # nothing is folded twice


def test_the_last_answer_of_a_key_wins_and_lines_that_are_no_cache_rows_are_skipped(store):
    folder = store.path.parent / "mama.duckdb.answers"
    folder.mkdir()
    lines = [
        json.dumps(row("k1", "oldest")),
        "not json at all",
        json.dumps(row("k2", "only")),
        json.dumps({**row("k3", "bad"), "attempts": "one"}),
        json.dumps({**row("k4", "bad"), "model": None}),
        json.dumps({**row("k5", "bad"), "created_at": "yesterday"}),
    ]  # lines 2, 4, 5 and 6 are no cache rows
    (folder / "20260101T000000000000-1-aaaaaaaa.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "20260101T000001000000-2-bbbbbbbb.jsonl").write_text(
        json.dumps(row("k1", "newest", "2026-01-01 00:00:01.000000")) + "\n"
    )
    skipped = [f"{folder}/20260101T000000000000-1-aaaaaaaa.jsonl:{n}: not a cache row, skipped" for n in (2, 4, 5, 6)]
    assert recover(store) == skipped + [
        "2 answers of a killed run recovered from 20260101T000000000000-1-aaaaaaaa.jsonl",
        "1 answers of a killed run recovered from 20260101T000001000000-2-bbbbbbbb.jsonl",
    ]
    assert cached(store) == {"k1": ("newest", "2026-01-01 00:00:01"), "k2": ("only", "2026-01-02 03:04:05.000006")}
    (folder / "20260101T000002000000-3-cccccccc.jsonl").write_text(json.dumps(row("k2", "re-asked later")) + "\n")
    recover(store)
    assert cached(store)["k2"][0] == "re-asked later"  # as a retried parse failure replaces its cached answer


RECOVERER = """
import sys, time
from pathlib import Path
from mama_pipeline.llm.answer_log import recover
from mama_pipeline.store import Store
print("ready", flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.001)
print("\\n".join(recover(Store(sys.argv[1]))))
"""


def test_recoverers_racing_on_the_same_logs_fold_each_file_once(store, tmp_path):
    folder = store.path.parent / "mama.duckdb.answers"
    folder.mkdir()
    names = [f"20260101T0000{n:02d}000000-{n}-0000abcd.jsonl" for n in range(20)]
    for n, name in enumerate(names):
        (folder / name).write_text(json.dumps(row(f"k{n}", f"answer {n}")) + "\n")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RECOVERER, str(store.path), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    assert [p.stdout.readline() for p in procs] == ["ready\n"] * 4
    go.touch()  # all four start within a millisecond or so
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    reported = [line.rsplit(" ", 1)[1] for out, _ in outs for line in out.splitlines() if line]
    assert sorted(reported) == names  # every file recovered, by one recoverer only
    assert cached(store) == {f"k{n}": (f"answer {n}", "2026-01-02 03:04:05.000006") for n in range(20)}
    assert not list(folder.iterdir())


def test_a_cache_an_older_ddl_keyed_is_rebuilt_by_the_first_client_and_folds_keep_keys_unique(store, make_client):
    with store.connect(write=True) as con:  # the cache as its DDL had it before: a PRIMARY KEY on cache_key
        con.execute(KEYED_CACHE_DDL)
    make_client()
    with store.connect() as con:
        assert not con.execute("SELECT * FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'").fetchall()
    folder = store.path.parent / "mama.duckdb.answers"
    folder.mkdir()
    for n, (key, reasoning) in enumerate([("k1", "first"), ("k2", "only"), ("k1", "second"), ("k1", "third")]):
        (folder / f"2026010{n}T000000000000-{n}-aaaaaaaa.jsonl").write_text(json.dumps(row(key, reasoning)) + "\n")
        recover(store)  # one fold each: a key's later answer replaces its row
    assert {k: v[0] for k, v in cached(store).items()} == {"k1": "third", "k2": "only"}
