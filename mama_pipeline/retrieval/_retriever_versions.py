"""Each configured retriever's version: its settings entry, its ranking depth, the files it names, its inputs.

The data versions of ``retrieval_input_files``, one partition per retriever: a changed entry (a parameter, a
model folder's files, the depth the pools ask of it) changes its own partition's version and those of the
fusions and rerankers that read its ranking, so only their ``rankings`` partitions (and what reads them) are
stale. The other assets' code versions hash ``retrieval.retrievers`` by the names alone
(``common/code_version.py``, ``BY_PARTITION``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from mama_pipeline.common.observed_inputs import settings_files_fingerprint
from mama_pipeline.retrieval._registry import needs
from mama_pipeline.retrieval.settings import RetrievalSettings


def retriever_versions(section: RetrievalSettings, resolve: Callable[[str], Path]) -> dict[str, str]:
    """Retriever name -> SHA-256 over its entry (JSON), its depth, its named files' fingerprint and the versions
    of the retrievers whose rankings it reads."""
    done: dict[str, str] = {}

    def version(name: str) -> str:
        if name not in done:
            spec = section.retriever(name)
            own = {
                "entry": spec.model_dump(mode="json"),
                "depth": section.depth_of(name),
                "files": settings_files_fingerprint(spec, resolve),
                "reads": {run: version(run) for run in needs(spec)},
            }
            done[name] = hashlib.sha256(json.dumps(own, sort_keys=True).encode()).hexdigest()
        return done[name]

    return {name: version(name) for name in section.retriever_names}
