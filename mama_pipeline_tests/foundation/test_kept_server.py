"""One embedded server kept for every step of an in-process run (model loaded once, prompt cache kept)."""

from __future__ import annotations

import urllib.request

import pytest

from mama_pipeline.llm.kept_server import kept_for_the_run, kept_url
from mama_pipeline.llm.settings import EmbeddedServerSettings
from mama_pipeline.resources import LLMResource, SettingsResource
from mama_pipeline_tests.support.llm_stages import with_embedded


def test_outside_a_run_nothing_is_kept(tmp_path):
    assert kept_url(EmbeddedServerSettings(), tmp_path) is None


def test_runs_do_not_nest():
    with kept_for_the_run():
        with pytest.raises(RuntimeError, match="already kept"):
            with kept_for_the_run():
                pass


@pytest.mark.slow
def test_steps_of_a_run_share_one_server_which_stops_with_the_run(tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(
        with_embedded(
            f"data_dir: {tmp_path / 'data'}\nllm:\n  embedded_server: {{n_parallel: 1, n_ctx: 2048, threads: 1}}\n"
        )
    )
    llm = LLMResource(settings=SettingsResource(config_path=str(config)))
    with kept_for_the_run():
        urls = []
        for stage in ("classifier", "judge"):  # two steps, one after the other
            with llm.client(stage) as client:
                urls.append(client._resolve_urls()[0])
        urllib.request.urlopen(f"{urls[0]}/models", timeout=5).read()  # still serving between steps
        assert urls[0] == urls[1]
    with pytest.raises(OSError):  # stopped with the run
        urllib.request.urlopen(f"{urls[0]}/models", timeout=2)
    # outside a run, each client starts (and stops) its own
    with llm.client("classifier") as client:
        own = client._resolve_urls()[0]
        assert own != urls[0]


def test_auto_threads_are_the_cores_left_idle():
    from mama_pipeline.llm.embedded_server import free_cores, resolve_threads

    assert free_cores((100, 1000), (300, 1200), 2) == 2  # all idle
    assert free_cores((100, 1000), (200, 1200), 2) == 1  # half the time busy: one core free
    assert free_cores((100, 1000), (110, 1200), 2) == 1  # busy machine: still one thread
    assert free_cores((100, 1000), (100, 1000), 2) == 2  # no time passed: nothing seen busy
    assert resolve_threads(EmbeddedServerSettings(threads=3)) == 3
    assert (
        1
        <= resolve_threads(EmbeddedServerSettings(threads="auto"), sample_s=0.05)
        <= len(__import__("os").sched_getaffinity(0))
    )
    with pytest.raises(ValueError):
        EmbeddedServerSettings(threads=0)
    with pytest.raises(ValueError):
        EmbeddedServerSettings(threads="many")
