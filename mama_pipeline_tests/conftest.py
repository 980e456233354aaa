"""Shared fixtures: a fake OpenAI-compatible server, a store, a client factory, one demo run per test run and the
sample's document vectors.

Under pytest-xdist (scripts/test.sh: one worker more than the cores, --dist loadgroup) every worker process has its
own session, so a session fixture is built once per worker that asks for it. The tests of a build made once per
run (``SHARED``) are kept on one worker: every test that uses it is put in its xdist group here. The sample's
vectors, a file the tests copy, are built once per run by the first worker that asks, under a file lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.store import Store
from mama_pipeline_tests.support.demo_store import DemoStore, build_demo_store
from mama_pipeline_tests.support.fake_llm_server import ServerHandle, running_server
from mama_pipeline_tests.support.sample_embeddings import sample_embeddings as encoded_sample

os.environ.setdefault("DAGSTER_HOME", "")  # set per test where a Dagster instance is needed
# tests set their own configuration and data folder; a developer's exported ones must not reach them
for _name in ("MAMA_CONFIG", "MAMA_DATA_DIR"):
    os.environ.pop(_name, None)


# builds made once per run: the tests using one are its xdist group, named for it (one worker builds it, runs them all)
SHARED = ("demo_store", "label_studio")


@pytest.hookimpl(trylast=True)  # after xdist's own hook
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of a shared build with its xdist group, and under --dist loadgroup give every grouped test the
    ``@group`` node id suffix its worker is chosen by: pytest-xdist 3.8 writes that suffix to ``item._nodeid``, which
    pytest 9.2's structured node ids no longer read, so it groups nothing (pytest-dev/pytest-xdist#1386).

    The slow tests and the shared builds' groups go first (in their collected order otherwise): the workers take
    tests in this order, so the long ones start while the short ones can still fill the other worker, instead of
    one long test ending the run alone."""
    from _pytest.nodeid import NodeId

    for item in items:
        for fixture in sorted(set(SHARED) & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.xdist_group(fixture))
        groups = sorted({str(m.args[0] if m.args else m.kwargs["name"]) for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(groups)
        if getattr(config.option, "loadgroup", False) and groups and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)
    items.sort(
        key=lambda item: (
            item.get_closest_marker("slow") is None and not set(SHARED) & set(getattr(item, "fixturenames", ()))
        )
    )


@pytest.fixture(autouse=True)
def _in_process_runs_hold_the_store_open(monkeypatch) -> None:
    """A test's in-process run (``dg.materialize``) keeps its store's database open for the run, as
    ``mama-pipeline materialize --executor in_process`` does (``hold_open``): opening the file for every read and
    write was a third of such a test's time. Runs in other processes (the command line, the multiprocess and dask
    executors) still open it for each unit of work."""
    import dagster

    from mama_pipeline.store.duckdb_store import hold_open

    materialize = dagster.materialize

    def held(*args, **kwargs):
        store = (kwargs.get("resources") or {}).get("store")
        if not hasattr(store, "get"):
            return materialize(*args, **kwargs)
        with hold_open(store.get().path):
            return materialize(*args, **kwargs)

    monkeypatch.setattr(dagster, "materialize", held)


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


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory, fake_llm: ServerHandle, sample_embeddings: Path) -> DemoStore:
    """One ``mama-pipeline demo`` (support/demo_store.py) on this session's fake server, starting from the sample's
    document vectors, for the tests that read its store, releases or Dagster instance; a test that would change it
    works on a copy."""
    return build_demo_store(tmp_path_factory.mktemp("demo_store"), fake_llm.url, sample_embeddings)


@pytest.fixture(scope="session")
def sample_embeddings(tmp_path_factory) -> Path:
    """A store holding only the bundled sample's document vectors (support/sample_embeddings.py), encoded once per
    test run: under xdist in the folder the workers' temporary folders share, by the first worker that asks."""
    base = tmp_path_factory.getbasetemp()
    return encoded_sample(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)
