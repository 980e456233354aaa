"""An area's public face: the names other parts may import from the area's package, each loaded from the module
that defines it on first use (PEP 562), so importing the package loads nothing of the area.

An area's ``__init__.py`` declares ``DEFINED_IN`` (public name -> the dotted module that defines it, a literal
dict that ``common/import_graph.py`` reads to resolve ``from mama_pipeline.<area> import name`` to that module),
``__all__`` and ``__getattr__, __dir__ = lazy_face(__name__, DEFINED_IN)``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

FACE_TABLE = "DEFINED_IN"  # the name of a face's table, read by common/import_graph.py


def lazy_face(package: str, defined_in: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's module ``__getattr__`` (a public name read from its module at each lookup, so a patched
    module attribute is seen) and ``__dir__``."""

    def __getattr__(name: str) -> Any:
        if name not in defined_in:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(defined_in[name]), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(defined_in))

    return __getattr__, __dir__
