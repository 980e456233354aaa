"""The retriever kinds: one module each in ``retrieval/kinds/``, found there, asked by every other area.

A kind module defines ``KIND``, a :class:`RetrieverKind`: its settings class (the ``kind`` name is that
class's ``kind`` literal), what it can do, and how it searches. Areas ask :func:`kind_of` or
:func:`kinds` instead of naming kinds. :func:`register` adds a kind defined elsewhere (a test's).
Light: the kind modules import their heavy libraries inside their functions.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mama_pipeline.retrieval.retriever_params import RetrieverSettings


@dataclass(frozen=True)
class RetrieverKind:
    """One retriever kind: its settings, its capabilities and its searcher."""

    settings: type[RetrieverSettings]
    # (spec, chunks, queries, depth, corpus_version, env) -> registry.Searcher, chunks and queries sorted by id
    searcher: Callable[..., Any]
    # (params, resolve) -> an embedding_cache.Encoder of the documents and queries; None: the kind embeds nothing
    encoder: Callable[..., Any] | None = None
    ranks_free_text: bool = True  # ranks any query text (False: a run file made for given queries)
    reads_runs: bool = False  # ranks from other retrievers' stored rankings (fusion, reranking)
    dense_vectors: bool = False  # its encoder gives dense document vectors (nearest-neighbour chunks)
    tokenizer: bool = False  # its encoder's model has a tokenizer to count document tokens with

    @property
    def name(self) -> str:
        return self.settings.model_fields["kind"].annotation.__args__[0]

    @property
    def answers_free_text(self) -> bool:
        """Ranks any text on its own: a RAG system can retrieve with it."""
        return self.ranks_free_text and not self.reads_runs


_registered: dict[str, RetrieverKind] = {}


def kinds() -> dict[str, RetrieverKind]:
    """Every kind by name: the package's (in module name order), then the registered ones."""
    if not _registered:
        from mama_pipeline.retrieval import kinds as package  # the import graph: this reaches every kind module

        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            kind = importlib.import_module(f"{package.__name__}.{info.name}").KIND
            _registered[kind.name] = kind
    return _registered


def kind_of(spec: RetrieverSettings) -> RetrieverKind:
    return kinds()[spec.kind]


def register(kind: RetrieverKind) -> None:
    """Add a kind from outside the package (again: nothing); the configuration schema takes it from then on."""
    from mama_pipeline.retrieval.settings import rebuild_retriever_union

    if kinds().get(kind.name) is kind:
        return
    if kind.name in kinds():
        raise ValueError(f"retriever kind {kind.name!r} is already registered")
    _registered[kind.name] = kind
    rebuild_retriever_union()
