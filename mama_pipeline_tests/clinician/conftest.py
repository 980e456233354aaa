"""One real Label Studio server per test run for the clinician tests that need it (one xdist worker runs them all:
the root conftest puts every test using ``label_studio`` in one group)."""

from collections.abc import Iterator

import pytest

from mama_pipeline_tests.clinician.label_studio_server import VERSION_FILE, Server, running_label_studio


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The test that stops the shared server runs after every other test (a stable sort: the rest keep their order)."""
    items.sort(key=lambda item: item.get_closest_marker("stops_label_studio") is not None)


@pytest.fixture(scope="session")
def version_before_start() -> int | None:
    """The modification time of Label Studio's version_.py before the server starts (None: not installed yet)."""
    return VERSION_FILE.stat().st_mtime_ns if VERSION_FILE.exists() else None


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory, version_before_start) -> Iterator[Server]:
    with running_label_studio(tmp_path_factory.mktemp("label_studio")) as server:
        yield server
