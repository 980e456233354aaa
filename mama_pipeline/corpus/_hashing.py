"""Content-derived identifiers: chunk ids and the corpus version.

A chunk id is the first 16 hex characters of the SHA-256 of the chunk's canonical
text encoded as UTF-8. The corpus version is the first 16 hex characters of the
SHA-256 over the sorted full SHA-256 digests of every chunk's canonical text (one
per line), so it changes when any chunk is added, removed or edited and does not
depend on the order of the bundle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

ID_HEX = 16


def text_digest(text: str) -> str:
    """Full SHA-256 hex digest of a canonical chunk text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(text: str) -> str:
    """The 16-hex chunk id of a canonical chunk text."""
    return text_digest(text)[:ID_HEX]


def corpus_version(digests: Iterable[str]) -> str:
    """Version of a chunk set from the full digests of its canonical texts."""
    joined = "\n".join(sorted(digests))
    return hashlib.sha256(joined.encode("ascii")).hexdigest()[:ID_HEX]
