"""Adding a retriever kind defined outside ``retrieval/_kinds/`` (a test's): the registry and the schemas.

Apart from :mod:`~mama_pipeline.retrieval._retriever_kinds` because it rebuilds the root settings, which import
that module through ``retrieval/settings.py``.
"""

from __future__ import annotations

from mama_pipeline.retrieval._retriever_kinds import add
from mama_pipeline.retrieval._retriever_params import RetrieverKind
from mama_pipeline.retrieval.settings import rebuild_retriever_union
from mama_pipeline.settings import PipelineSettings


def register_retriever_kind(kind: RetrieverKind) -> None:
    """Add ``kind`` to the registry and to the configuration's schema (``retrieval.retrievers`` and the root's)."""
    add(kind)
    rebuild_retriever_union()
    PipelineSettings.model_rebuild(force=True)
