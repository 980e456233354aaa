"""SIGKILL the judging process at random points, ten times, then let it finish.

After every kill: no committed label is lost or changed, none is duplicated, and
the next run sends no request for a pair whose label or answer was already
stored (the fake server lists every request digest it received).
"""
import json
import random
import subprocess
import sys
import time
import urllib.request

import polars as pl
import pytest

from mama_pipeline.judging.rubric import RELEVANCE_JUDGE, JudgeVerdictsWithReasoning, render_pair
from mama_pipeline.llm.client import cache_key, decoding_params, schema_of
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.fake_llm_server import running_server
from mama_pipeline_tests.judging import kill_worker
from mama_pipeline_tests.judging.synthetic import request_digests

pytestmark = pytest.mark.slow
CYCLES = 10


def requested_digests(server) -> set[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/stats") as r:
        return {k.split(":", 1)[1] for k in json.load(r) if k.startswith("distinct:")}


def pair_cache_keys(pool, queries, chunks, url) -> dict[str, tuple[str, str]]:
    settings = StageSettings(base_urls=[url], **kill_worker.SETTINGS)
    schema = schema_of(JudgeVerdictsWithReasoning)
    rows = pool.join(queries, on="query_id").join(chunks.select("chunk_id", "text", "page", csource="source"), on="chunk_id")
    return {
        cache_key("fake-endpoint", "fake-model", RELEVANCE_JUDGE,
                  render_pair(r["query_text"], r["csource"], r["page"], r["text"]), decoding_params(settings), schema):
        (r["query_id"], r["chunk_id"])
        for r in rows.iter_rows(named=True)
    }


def snapshot(store: Store, keys: dict[str, tuple[str, str]]) -> tuple[pl.DataFrame, set[tuple[str, str]]]:
    """Stored labels, and every pair with a stored label or a stored answer."""
    if not store.path.exists():
        return pl.DataFrame(), set()
    with store.connect() as con:
        tables = {t for (t,) in con.execute("select table_name from information_schema.tables").fetchall()}
        labels = con.execute("select * from judgment_labels order by query_id, chunk_id").pl() \
            if "judgment_labels" in tables else pl.DataFrame()
        cached = {k for (k,) in con.execute("select cache_key from llm_responses").fetchall()} \
            if "llm_responses" in tables else set()
    stored = {keys[k] for k in cached if k in keys}
    if labels.height:
        stored |= set(labels.select("query_id", "chunk_id").iter_rows())
    return labels, stored


def test_sigkill_at_random_points_loses_duplicates_and_resends_nothing(tmp_path):
    queries, chunks, pool = kill_worker.corpus()
    digests = request_digests(pool, queries, chunks)
    db = tmp_path / "mama.duckdb"
    store = Store(db)
    rng = random.Random(20250715)
    partial_kills = 0
    with running_server(delay=0.1) as server:
        keys = pair_cache_keys(pool, queries, chunks, server.url)
        labels_before, stored_before = snapshot(store, keys)
        for cycle in range(CYCLES + 1):
            server.reset()
            proc = subprocess.Popen([sys.executable, "-m", "mama_pipeline_tests.judging.kill_worker", str(db), server.url],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if cycle < CYCLES:
                deadline = time.monotonic() + 60
                while server.stats()["chat_calls"] == 0 and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, 2.0))  # a random point after judging started
                proc.kill()
            out, err = proc.communicate(timeout=120)
            if cycle == CYCLES:
                assert proc.returncode == 0, err[-3000:]
            sent = {digests[d] for d in requested_digests(server)}
            assert not sent & stored_before, f"cycle {cycle}: {len(sent & stored_before)} stored pairs sent again"
            labels, stored = snapshot(store, keys)
            assert labels.height == labels.select("query_id", "chunk_id").n_unique(), "a label is duplicated"
            if labels_before.height:
                kept = labels.join(labels_before.select("query_id", "chunk_id"), on=["query_id", "chunk_id"])
                assert kept.sort("query_id", "chunk_id").equals(labels_before.sort("query_id", "chunk_id")), \
                    f"cycle {cycle}: a stored label was lost or changed"
            partial_kills += cycle < CYCLES and 0 < len(stored) < pool.height and len(stored) > len(stored_before)
            labels_before, stored_before = labels, stored
    assert partial_kills >= 5, "too few kills landed while judging was under way"
    assert labels_before.height == pool.height
    assert set(labels_before.select("query_id", "chunk_id").iter_rows()) == set(pool.select("query_id", "chunk_id").iter_rows())
