"""Values derived from the package's own files (its import graph, the names its modules' top-level statements bind
and use, its tables' polars schemas), kept on disk between processes under a digest of every byte they derive from
and of the Python and library versions that derive them.

Each process that loads the definitions needs them; deriving them again costs seconds. Any edit to a source gives
another digest, so a kept value is never stale. A value that cannot be read or written is derived again: the file
holds nothing the sources do not.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/mama_pipeline`` (``~/.cache/mama_pipeline`` when unset)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mama_pipeline"


def kept(
    kind: str,
    sources: Iterable[bytes],
    derive: Callable[[], T],
    load: Callable[[Path], T],
    dump: Callable[[T, Path], None],
) -> T:
    """``derive()``, or what ``load`` reads from the file ``dump`` wrote for the same ``kind`` and ``sources``."""
    h = hashlib.sha256(f"{kind}\0{sys.version}\0".encode())
    for part in sources:
        h.update(hashlib.sha256(part).digest())
    path = cache_dir() / kind / h.hexdigest()
    try:
        return load(path)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        pass
    value = derive()
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        dump(value, part)
        os.replace(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink(missing_ok=True)
    return value
