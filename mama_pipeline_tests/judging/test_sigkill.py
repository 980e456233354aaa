"""SIGKILL the judging process at random points, ten times, then let it finish.

After every kill: no committed label is lost or changed, none is duplicated, no
cache key is stored twice, and the next run sends no request for a pair whose
label or answer was stored or acknowledged to the answer log (the complete lines
of the log files the killed process left; the fake server lists every request
digest it received). The log holds cache rows only: the API key never reaches it.
"""

import hashlib
import json
import os
import random
import subprocess
import sys
import time
import urllib.request

import polars as pl
import pytest

from mama_pipeline.judging._rubric import RELEVANCE_JUDGE, JudgeVerdictsWithReasoning, render_pair
from mama_pipeline.llm.client import cache_key, decoding_params, schema_of
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support import kill_worker
from mama_pipeline_tests.support.fake_llm_server import running_server
from mama_pipeline_tests.support.synthetic_judging import request_digests

pytestmark = pytest.mark.slow
CYCLES = 10
SECRET = "sk-kill-test-3f9a1c7e5b2d"  # the API key the worker sends
CACHE_FIELDS = {
    "cache_key",
    "stage",
    "endpoint",
    "model",
    "template_id",
    "template_hash",
    "schema_hash",
    "status",
    "raw_text",
    "reasoning",
    "parsed_json",
    "error",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "attempts",
    "latency_s",
    "created_at",
}


def requested_digests(server) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/stats") as r:
        return {k.split(":", 1)[1] for k in json.load(r) if k.startswith("distinct:")}


def pair_cache_keys(pool, queries, chunks, url) -> dict[str, tuple[str, str]]:
    settings = StageSettings(base_urls=[url], **kill_worker.SETTINGS)
    schema = schema_of(JudgeVerdictsWithReasoning)
    rows = pool.join(queries, on="query_id").join(
        chunks.select("chunk_id", "text", "page", csource="source"), on="chunk_id"
    )
    return {
        cache_key(
            "fake-endpoint",
            "fake-model",
            RELEVANCE_JUDGE,
            render_pair(r["query_text"], r["csource"], r["page"], r["text"]),
            decoding_params(settings),
            schema,
        ): (r["query_id"], r["chunk_id"])
        for r in rows.iter_rows(named=True)
    }


def snapshot(store: Store, keys: dict[str, tuple[str, str]]) -> tuple[pl.DataFrame, set[tuple[str, str]], set[str]]:
    """Stored labels, every pair with a stored label or a stored answer, and the cached keys."""
    if not store.path.exists():
        return pl.DataFrame(), set(), set()
    with store.connect() as con:
        tables = {t for (t,) in con.execute("select table_name from information_schema.tables").fetchall()}
        labels = (
            con.execute("select * from judgment_labels order by query_id, chunk_id").pl()
            if "judgment_labels" in tables
            else pl.DataFrame()
        )
        cached = (
            [k for (k,) in con.execute("select cache_key from llm_responses").fetchall()]
            if "llm_responses" in tables
            else []
        )
    assert len(cached) == len(set(cached)), "a cache key is stored twice"
    stored = {keys[k] for k in cached if k in keys}
    if labels.height:
        stored |= set(labels.select("query_id", "chunk_id").iter_rows())
    return labels, stored, set(cached)


def acknowledged(store: Store) -> tuple[dict[str, dict], bytes]:
    """The rows of the complete lines of the answer log files left beside the store, and the files' bytes."""
    folder = store.path.with_name(store.path.name + ".answers")
    rows, raw = {}, b""
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        data = path.read_bytes()
        raw += data
        for line in data.split(b"\n")[:-1]:  # what follows the last newline is a line the kill cut short
            row = json.loads(line)
            rows[row["cache_key"]] = row
    return rows, raw


def cache_rows(store: Store, keys: list[str]) -> dict[str, dict]:
    with store.connect() as con:
        df = con.execute("select * from llm_responses where cache_key in (select unnest(?))", [keys]).pl()
    return {
        r["cache_key"]: {**r, "created_at": r["created_at"].strftime("%Y-%m-%d %H:%M:%S.%f")}
        for r in df.iter_rows(named=True)
    }


def test_sigkill_at_random_points_loses_duplicates_and_resends_nothing(tmp_path):
    queries, chunks, pool = kill_worker.corpus()
    digests = request_digests(pool, queries, chunks)
    db = tmp_path / "mama.duckdb"
    store = Store(db)
    rng = random.Random(20250715)
    partial_kills = kills_with_log_only_answers = 0
    env = {**os.environ, "MAMA_LLM_API_KEY": SECRET}
    with running_server(delay=0.1) as server:
        keys = pair_cache_keys(pool, queries, chunks, server.url)
        labels_before, stored_before, _ = snapshot(store, keys)
        logged_before: dict[str, dict] = {}
        for cycle in range(CYCLES + 1):
            server.reset()
            proc = subprocess.Popen(
                [sys.executable, "-m", "mama_pipeline_tests.support.kill_worker", str(db), server.url],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            if cycle < CYCLES:
                deadline = time.monotonic() + 60
                while server.stats()["chat_calls"] == 0 and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, 2.0))  # a random point after judging started
                proc.kill()
            out, err = proc.communicate(timeout=120)
            if cycle == CYCLES:
                assert proc.returncode == 0, err[-3000:]
                assert hashlib.sha256(SECRET.encode()).hexdigest()[:12] in server.stats()["bearer_digests"]
            sent = {digests[d] for d in requested_digests(server)}
            acked_before = stored_before | {keys[k] for k in logged_before}
            assert not sent & acked_before, (
                f"cycle {cycle}: {len(sent & acked_before)} stored or logged pairs sent again"
            )
            labels, stored, cached = snapshot(store, keys)
            assert labels.height == labels.select("query_id", "chunk_id").n_unique(), "a label is duplicated"
            if labels_before.height:
                kept = labels.join(labels_before.select("query_id", "chunk_id"), on=["query_id", "chunk_id"])
                assert kept.sort("query_id", "chunk_id").equals(labels_before.sort("query_id", "chunk_id")), (
                    f"cycle {cycle}: a stored label was lost or changed"
                )
            if logged_before:  # the killed run's log was folded into the cache as it was written
                assert cache_rows(store, sorted(logged_before)) == logged_before
            logged, raw = acknowledged(store)
            assert SECRET.encode() not in raw, "the API key reached the answer log"
            assert all(set(row) == CACHE_FIELDS for row in logged.values()), "a log line is not a cache row"
            kills_with_log_only_answers += bool(set(logged) - cached)
            partial_kills += cycle < CYCLES and 0 < len(stored) < pool.height and len(stored) > len(stored_before)
            labels_before, stored_before, logged_before = labels, stored, logged
    assert partial_kills >= 5, "too few kills landed while judging was under way"
    assert kills_with_log_only_answers >= 3, "too few kills left answers that only the log held"
    assert not logged_before, "the finished run left an answer log behind"
    assert labels_before.height == pool.height
    assert set(labels_before.select("query_id", "chunk_id").iter_rows()) == set(
        pool.select("query_id", "chunk_id").iter_rows()
    )
