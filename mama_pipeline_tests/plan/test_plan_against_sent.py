"""The bound before anything is built holds on the bundled sample: every stage sends no more than its bound of
requests (counted at the fake server and in the cache) and of prompt tokens (counted at the fake server, each
stage asking for its own model name), the judge's bound is at most twice what it sends, the exact plan of
``judged_labels`` once its inputs exist is within 5% of what it sends (requests and prompt tokens), the data
folder the run wrote is no larger than the store's predicted size, and the run's summary says planned against
sent. Every LLM stage and answering system on the fake OpenAI-compatible server
(BM25 left out: the fake writer's questions share no words with the corpus). The run starts, once the empty
plan is checked, from a store holding the sample's document vectors (conftest's ``sample_embeddings``): the bounds
are of requests to the LLM stages, which the vectors do not change."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mama_pipeline.settings import SAMPLE_CONFIG
from mama_pipeline.store import Store
from mama_pipeline_tests.plan.test_plan import bounds_of
from mama_pipeline_tests.support.llm_stages import served_without_bm25, with_embedded
from mama_pipeline_tests.support.sample_embeddings import with_embeddings_of

REPO = Path(__file__).resolve().parents[2]


def write_config(root: Path, url: str) -> Path:
    shutil.copytree(SAMPLE_CONFIG.parent / "sample_data", root / "sample_data")
    raw = yaml.safe_load(SAMPLE_CONFIG.read_text())
    served_without_bm25(raw, url, model_of)
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(with_embedded(raw)))
    return config


def model_of(stage: str) -> str:
    """Each stage asks the fake server for its own model name, so that the server counts its prompts apart."""
    return "sent-" + stage.replace(":", "-")


def server_tokens(stats: dict[str, int], before: dict[str, int], stage: str) -> int:
    """The prompt tokens the server received for ``stage`` since ``before`` (characters / 4 of each distinct
    request, rounded up: the estimate the plan counts with for a model with no local tokenizer)."""
    key = f"prompt_chars_over_4:{model_of(stage)}"
    return stats.get(key, 0) - before.get(key, 0)


def token_bounds_of(stdout: str) -> dict[str, int]:
    """Per stage, the summed prompt-token bounds printed under its blocks."""
    out, stage = {}, None
    for line in stdout.splitlines():
        if " · " in line and not line.startswith(" "):
            stage = line.split(" · ")[1]
        elif line.startswith("  prompt tokens: at most ") and stage:
            out[stage] = out.get(stage, 0) + int(line.split()[4].replace(",", ""))
    return out


def sent(store: Store) -> dict[str, int]:
    """Requests sent per stage: distinct cache keys answered or failed."""
    out: dict[str, int] = {}
    for table in ("llm_responses", "llm_failures"):
        if store.table_exists(table):
            for stage, n in store.query(f"SELECT stage, count(DISTINCT cache_key) FROM {table} GROUP BY stage").rows():
                out[stage] = out.get(stage, 0) + n
    return out


@pytest.mark.slow
def test_the_samples_run_sends_no_more_than_the_bound(tmp_path, fake_llm, sample_embeddings):
    config = write_config(tmp_path / "sample", fake_llm.url)
    data = tmp_path / "data"
    data.mkdir()
    env = {
        **os.environ,
        "MAMA_CONFIG": str(config),
        "MAMA_DATA_DIR": str(data),
        "DAGSTER_HOME": str(tmp_path / "home"),
        "MAMA_LLM_API_KEY": "unused",
        "PYTHONPATH": str(REPO),
    }

    def cli(*args: str) -> subprocess.CompletedProcess:
        out = subprocess.run(
            [sys.executable, "-m", "mama_pipeline.cli", *args], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
        return out

    at_start = fake_llm.stats()  # the server is the session's: other tests' calls came first
    calls_at_start = at_start["chat_calls"]
    empty_plan = cli("plan", "--select", "*").stdout
    planned, token_bound = bounds_of(empty_plan), token_bounds_of(empty_plan)
    assert list(data.iterdir()) == []  # the plan wrote nothing
    with_embeddings_of(sample_embeddings, data / "mama.duckdb")
    bound: dict[str, int] = {}
    for (_, stage), n in planned.items():
        bound[stage] = bound.get(stage, 0) + n

    cli("materialize", "--executor", "in_process", "--select", "*pooled_pairs")
    store = Store(data / "mama.duckdb")
    assert "judge" not in sent(store)
    exact = cli("plan", "--select", "judged_labels").stdout
    ((to_send, tokens),) = [
        (int(n.replace(",", "")), int(t.replace(",", "")))
        for n, t in re.findall(
            r"requests [\d,]+: [\d,]+ cached, ([\d,]+) to send.*?prompt tokens to send ([\d,]+)", exact
        )
    ]
    before_judge = fake_llm.stats()
    cli("materialize", "--executor", "in_process", "--select", "judged_labels")
    judged = sent(store)["judge"]
    assert abs(to_send - judged) <= 0.05 * judged, (to_send, judged)
    judged_tokens = server_tokens(fake_llm.stats(), before_judge, "judge")
    assert abs(tokens - judged_tokens) <= 0.05 * judged_tokens, (tokens, judged_tokens)

    calls_before_rest = fake_llm.stats()["chat_calls"]
    rest = cli("materialize", "--executor", "in_process", "--select", "*").stdout
    totals = sent(store)
    assert set(totals) <= set(bound), set(totals) - set(bound)
    for stage, n in totals.items():
        assert 0 < n <= bound[stage], (stage, n, bound[stage])
    assert bound["judge"] <= 2 * totals["judge"], (bound["judge"], totals["judge"])
    # prompt tokens: every stage's bound holds for what the server received
    stats = fake_llm.stats()
    received = {stage: server_tokens(stats, at_start, stage) for stage in totals}
    assert set(token_bound) == set(bound)
    for stage, n in received.items():
        assert 0 < n <= token_bound[stage], (stage, n, token_bound[stage])
    # the store's predicted size (what doctor checks the room for) holds for the whole data folder the run wrote
    from mama_pipeline.plan._store_size import predict_store
    from mama_pipeline.settings import load_settings

    written = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    predicted = predict_store(load_settings(config)).bytes
    assert 0 < written <= predicted, (written, predicted)
    print("stage: requests bound / sent; prompt tokens bound / received at the server")  # shown with pytest -rP
    for stage in sorted(totals):
        print(f"{stage}: {bound[stage]:,} / {totals[stage]:,}; {token_bound[stage]:,} / {received[stage]:,}")
    print(f"data folder: {written:,} bytes written, {predicted:,} predicted")
    print(f"judged_labels, exact plan once pooled_pairs exist / sent: {to_send:,} / {judged:,} requests; "
          f"{tokens:,} / {judged_tokens:,} prompt tokens")  # fmt: skip
    # at the server: no more than the bounds
    assert fake_llm.stats()["chat_calls"] - calls_at_start <= sum(bound.values())
    assert calls_before_rest > calls_at_start
    assert "requests sent this run / planned bound, per stage: " in rest and "SENT MORE THAN THE BOUND" not in rest
