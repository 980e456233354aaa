"""Shared fixtures: a fake OpenAI-compatible server, a store and a client factory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.fake_llm_server import ServerHandle, running_server

os.environ.setdefault("DAGSTER_HOME", "")  # set per test where a Dagster instance is needed
# tests set their own configuration and data folder; a developer's exported ones must not reach them
for _name in ("MAMA_CONFIG", "MAMA_DATA_DIR"):
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[ServerHandle]:
    with running_server() as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "mama.duckdb")


@pytest.fixture
def make_client(store: Store, fake_llm: ServerHandle) -> Callable[..., LLMClient]:
    def make(urls: list[str] | None = None, model: str = "fake-model", stage: str = "judge", **overrides) -> LLMClient:
        urls = urls or [fake_llm.url]
        settings = StageSettings(
            base_urls=urls,
            model=model,
            **{"backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0, **overrides},
        )
        return LLMClient(
            stage, settings, store, endpoint=",".join(sorted(urls)), model=model, resolve_urls=lambda: urls
        )

    return make
