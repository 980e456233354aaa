"""File-level helpers shared by the release writer and verifier: hashes, row counts, atomic folders."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import polars as pl

PARQUET_COMPRESSION = "zstd"
PARQUET_LEVEL = 3  # zstd 9 was 4x slower for 7% smaller files on release-sized text
ROW_GROUP_SIZE = 100_000


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def row_count(path: Path) -> int | None:
    """Rows of a data file (parquet: from its footer; jsonl: non-empty lines); None for other files."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    if path.suffix == ".jsonl":
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    return None


def file_entry(path: Path) -> dict[str, Any]:
    """What a manifest records of one file."""
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size, "rows": row_count(path)}


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    """Parquet with fixed settings, so equal frames give equal bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    df.write_parquet(
        path, compression=PARQUET_COMPRESSION, compression_level=PARQUET_LEVEL, statistics=True,
        row_group_size=ROW_GROUP_SIZE,
    )


def json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


@contextlib.contextmanager
def atomic_folder(out_dir: Path) -> Iterator[Path]:
    """A temporary sibling folder that replaces ``out_dir`` by rename when the block succeeds.

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
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
