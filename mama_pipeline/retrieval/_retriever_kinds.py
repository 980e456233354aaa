"""The retriever kinds: one module each in ``retrieval/_kinds/``, found there, asked by every other area.

A kind module defines ``KIND``, a :class:`~mama_pipeline.retrieval._retriever_params.RetrieverKind`: its settings class (the ``kind`` name is that
class's ``kind`` literal), what it can do, and how it searches. Areas ask :func:`kind_of` or
:func:`kinds` instead of naming kinds. :func:`add` adds a kind defined elsewhere (a test's), through
``kind_registration.register_retriever_kind``.
Light: the kind modules import their heavy libraries inside their functions.
"""

from __future__ import annotations

import importlib
import pkgutil

from mama_pipeline.retrieval._retriever_params import RetrieverKind, RetrieverSettings

_registered: dict[str, RetrieverKind] = {}


def kinds() -> dict[str, RetrieverKind]:
    """Every kind by name: the package's (in module name order), then the registered ones."""
    if not _registered:
        from mama_pipeline.retrieval import _kinds as package  # the import graph: this reaches every kind module

        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            kind = importlib.import_module(f"{package.__name__}.{info.name}").KIND
            _registered[kind.name] = kind
    return _registered


def kind_of(spec: RetrieverSettings) -> RetrieverKind:
    return kinds()[spec.kind]


def add(kind: RetrieverKind) -> None:
    """Add a kind defined outside the package (again: nothing); the configuration schema takes it once
    ``kind_registration.register_retriever_kind`` rebuilds it."""
    if kinds().get(kind.name) is kind:
        return
    if kind.name in kinds():
        raise ValueError(f"retriever kind {kind.name!r} is already registered")
    _registered[kind.name] = kind
