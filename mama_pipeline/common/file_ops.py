"""Whole-file helpers: content hashes, files and folders replaced atomically."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from mama_pipeline.common.content_version import record_written


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def path_digest(path: Path) -> str:
    """SHA-256 of a file's bytes; of a folder, over each file's relative path and bytes (not times)."""
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    for p in sorted(q for q in path.rglob("*") if q.is_file()):
        h.update(f"{p.relative_to(path).as_posix()}\0{sha256_file(p)}\n".encode())
    return h.hexdigest()


def _record_path(path: Path) -> None:
    record_written(f"file:{path.name}", lambda: path_digest(path))


@contextlib.contextmanager
def atomic_folder(out_dir: Path) -> Iterator[Path]:
    """A temporary sibling folder that replaces ``out_dir`` by rename when the block succeeds (recorded in the
    current asset's data version, ``content_version``).

    On failure the temporary folder is removed and ``out_dir`` is left as it was.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
    old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        if out_dir.exists():
            out_dir.rename(old)
        tmp.rename(out_dir)
        _record_path(out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO]:
    """Write to a temporary file beside ``path``, renamed over it on success (recorded in the current asset's data
    version, ``content_version``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as fh:
            yield fh
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _record_path(path)
