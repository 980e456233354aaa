"""One real Label Studio server for the clinician tests that need it."""

from collections.abc import Iterator

import pytest

from mama_pipeline_tests.clinician.label_studio_server import Server, running_label_studio


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory) -> Iterator[Server]:
    with running_label_studio(tmp_path_factory.mktemp("label_studio")) as server:
        yield server
