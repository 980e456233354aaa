"""File-level helpers of the release writers and verifier: parquet bytes, row counts, the folder and its manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.common.file_ops import atomic_folder, sha256_file

MANIFEST = "manifest.json"
PARQUET_COMPRESSION = "zstd"
PARQUET_LEVEL = 3  # zstd 9 was 4x slower for 7% smaller files on release-sized text
ROW_GROUP_SIZE = 100_000


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


def write_parquet(df: pl.DataFrame | pl.LazyFrame, path: Path) -> None:
    """Parquet with fixed settings, so equal frames give equal bytes; a lazy frame is streamed into the file
    (the same bytes as its collected frame written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = dict(
        compression=PARQUET_COMPRESSION, compression_level=PARQUET_LEVEL, statistics=True, row_group_size=ROW_GROUP_SIZE
    )
    if isinstance(df, pl.LazyFrame):
        df.sink_parquet(path, **settings)
    else:
        df.write_parquet(path, **settings)


def rows_of(df: pl.DataFrame | pl.LazyFrame) -> int:
    """A frame's rows (a lazy frame's counted by a scan)."""
    return df.height if isinstance(df, pl.DataFrame) else df.select(pl.len()).collect().item()


def json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


def write_release_folder(
    out_dir: Path, tables: dict[str, pl.DataFrame | pl.LazyFrame], texts: dict[str, bytes], manifest: dict[str, Any]
) -> dict[str, Any]:
    """Write ``tables`` (parquet) and ``texts`` into ``out_dir`` atomically, with ``manifest`` (its ``files``:
    every file's hash, size and rows) as ``manifest.json``; returns the manifest."""
    with atomic_folder(Path(out_dir)) as tmp:
        for rel, df in tables.items():
            write_parquet(df, tmp / rel)
        for rel, data in texts.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        manifest["files"] = {rel: file_entry(tmp / rel) for rel in sorted([*tables, *texts])}
        (tmp / MANIFEST).write_bytes(json_bytes(manifest))
    return manifest
