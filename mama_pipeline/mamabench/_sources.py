"""Reading the upstream pools: local files, hub-layout folders or the Hugging Face hub.

Every loader returns the pool's rows as a table of JSON records (one per
upstream row, all native fields kept) with the file each came from, its
0-based row index there, the file's sha256 and, for hub files, the commit.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from mama_pipeline.common.file_ops import sha256_file
from mama_pipeline.common.input_errors import InputError, at, one_line, read_text
from mama_pipeline.common.jsonl import json_lines
from mama_pipeline.mamabench._pools import Pool
from mama_pipeline.mamabench.settings import SourceLocation
from mama_pipeline.store.table_schema import table_schema


class SourceError(InputError):
    """An upstream file that cannot be read as its pool's format (one line: file, line or record, reason)."""


@dataclass(frozen=True)
class SourceFile:
    origin: str
    path: Path
    sha256: str
    revision: str | None


@dataclass
class RawPool:
    pool: str
    rows: pl.DataFrame
    files: list[SourceFile]
    outside_pool: dict[str, int] = field(default_factory=dict)  # rows of the file kept out by ``member``

    def metadata(self) -> dict[str, Any]:
        return {
            "rows": self.rows.height,
            "files": [f.origin for f in self.files],
            "sha256": {f.origin: f.sha256 for f in self.files},
            "revision": self.files[0].revision if self.files else None,
            "rows_outside_pool": self.outside_pool,
        }


def locate(loc: SourceLocation, resolve: Callable[[str], Path]) -> list[SourceFile]:
    """The local files of a pool, downloading hub files at the pinned revision."""
    if loc.repo_id is not None:
        return [_hub_file(loc.repo_id, loc.revision or "", name) for name in loc.files]
    base = resolve(loc.path or "")
    if not loc.files:
        if not base.is_file():
            raise SourceError(f"source file {base} does not exist")
        return [SourceFile(base.name, base, sha256_file(base), None)]
    if not base.is_dir():
        raise SourceError(f"source folder {base} does not exist")
    out = []
    for name in loc.files:
        path = base / name
        if not path.is_file():
            raise SourceError(f"source file {name} is missing from folder {base}")
        out.append(SourceFile(name, path, sha256_file(path), None))
    return out


def _hub_file(repo_id: str, revision: str, name: str) -> SourceFile:
    from huggingface_hub import hf_hub_download

    try:
        local = Path(hf_hub_download(repo_id, name, repo_type="dataset", revision=revision))
    except Exception as exc:  # network, auth, offline cache miss: all name the file
        raise SourceError(f"cannot fetch {name} from dataset {repo_id}@{revision}: {one_line(str(exc))}") from exc
    commit = local.parents[len(Path(name).parts) - 1].name  # .../snapshots/<commit>/<name>
    return SourceFile(name, local, sha256_file(local), commit)


def load_pool(pool: Pool, loc: SourceLocation, resolve: Callable[[str], Path]) -> RawPool:
    """Read every file of a pool, check its columns and keep the pool's rows."""
    files = locate(loc, resolve)
    schema = table_schema(f"mamabench_raw_{pool.name}")
    frames, outside = [], Counter()
    for f in files:
        rows, n_records = [], 0
        for index, record in _records(f.path, pool.required):
            n_records += 1
            if pool.member is not None:
                column, value = pool.member
                if record.get(column) != value:
                    outside[f"{column}={record.get(column)}"] += 1
                    continue
            uid = record.get(pool.id_column) if pool.id_column else None
            rows.append((f.origin, index, None if uid is None else str(uid), _dump(record), f.sha256, f.revision))
        if not n_records:
            raise SourceError(f"{f.path}: no records (an empty upstream file)")
        frames.append(pl.DataFrame(rows, schema=schema, orient="row"))
    df = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    return RawPool(pool.name, df, files, dict(sorted(outside.items())))


def first_records(pool: Pool, loc: SourceLocation, resolve: Callable[[str], Path], n: int) -> int:
    """Read the first ``n`` records of each local file of a pool as its adapter does (the required columns
    checked); the records read. Hashes nothing, downloads nothing (a hub location is refused)."""
    if loc.repo_id is not None:
        raise SourceError(f"{loc.repo_id}: a hub location; first_records reads local files only")
    base = resolve(loc.path or "")
    paths = [base / name for name in loc.files] if loc.files else [base]
    read = 0
    for path in paths:
        if not path.is_file():
            raise SourceError(f"source file {path} does not exist")
        got = sum(1 for _ in zip(range(n), _records(path, pool.required), strict=False))
        if not got:
            raise SourceError(f"{path}: no records (an empty upstream file)")
        read += got
    return read


def _dump(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, default=str)


def _records(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from _jsonl(path, required)
    elif suffix == ".json":
        yield from _json_list(path, required)
    elif suffix in (".parquet", ".csv", ".xlsx"):
        df = _table(path, suffix)
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise SourceError(
                f"{path}: missing column(s) {', '.join(repr(c) for c in missing)}; "
                f"the file has {', '.join(repr(c) for c in df.columns)}"
            )
        yield from enumerate(df.iter_rows(named=True))
    else:
        raise SourceError(f"{path}: unsupported file type {suffix!r} (expected .parquet, .jsonl, .json, .csv, .xlsx)")


def _table(path: Path, suffix: str) -> pl.DataFrame:
    try:
        if suffix == ".parquet":
            return pl.read_parquet(path)
        if suffix == ".csv":
            _check_csv_rows(path)
            return pl.read_csv(path, infer_schema=False)
        return pl.read_excel(path, engine="openpyxl", infer_schema_length=0)
    except SourceError:
        raise
    except Exception as exc:
        raise SourceError(f"{path}: cannot be read as {suffix}: {one_line(str(exc))[:300]}") from None


def _check_csv_rows(path: Path) -> None:
    """UTF-8 text whose every row has the header's number of fields (a truncated last row is an error)."""
    try:
        text = read_text(path, "source file")
    except InputError as exc:
        raise SourceError(str(exc)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise SourceError(f"{path}: empty CSV file (no header row)")
    for row in reader:
        if row and len(row) != len(header):
            raise SourceError(
                f"{path} line {reader.line_num}: {len(row)} fields where the header has {len(header)} "
                "(a truncated or wrongly shaped row)"
            )


def _check_keys(path: Path, where: str, record: Any, required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise SourceError(f"{path} {where}: expected a JSON object, got {type(record).__name__}")
    missing = [c for c in required if c not in record]
    if missing:
        raise SourceError(
            f"{path} {where}: missing column(s) {', '.join(repr(c) for c in missing)}; "
            f"the record has {', '.join(repr(c) for c in record)}"
        )
    return record


def _jsonl(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    lines = json_lines(path, "source file", lambda p, reason, line: SourceError(at(p, reason, line)))
    for index, (line_no, record) in enumerate(lines):
        yield index, _check_keys(path, f"line {line_no}", record, required)


def _json_list(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = read_text(path, "source file")
    except InputError as exc:
        raise SourceError(str(exc)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise SourceError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    for index, record in enumerate(data):
        yield index, _check_keys(path, f"record {index}", record, required)


def provenance_table(pool: Pool, rows: pl.DataFrame, loc: SourceLocation) -> pl.DataFrame:
    """One row per file of a loaded pool: hash, revision, rows, licence and where it was read from."""
    where = f"hf://datasets/{loc.repo_id}" if loc.repo_id else "local"
    return (
        rows.group_by("origin", "sha256", "revision")
        .len("rows")
        .with_columns(
            pl.lit(pool.name).alias("pool"),
            pl.lit(loc.licence or pool.licence).alias("licence"),
            pl.lit(where).alias("location"),
        )
        .select("pool", "origin", "sha256", "revision", pl.col("rows").cast(pl.Int64), "licence", "location")
        .sort("origin")
    )
