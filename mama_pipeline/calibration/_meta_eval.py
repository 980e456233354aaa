"""HealthBench's physician meta-evaluation file, read in its upstream jsonl format.

One row per (conversation, completion, consensus criterion) with one binary
label per physician. Every upstream field is kept as is; ``upstream_line`` (the
1-based line in the file) is added as the row's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from mama_pipeline.calibration.settings import MetaEvalSource
from mama_pipeline.common.file_ops import sha256_file
from mama_pipeline.common.input_errors import InputError
from mama_pipeline.common.jsonl import json_lines
from mama_pipeline.common.settings_base import resolve_path
from mama_pipeline.store.table_schema import table_schema

MESSAGE = pl.Struct({"role": pl.String, "content": pl.String})
META_EVAL_SCHEMA = table_schema("calibration_meta_eval")


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    role: str
    content: str


class MetaEvalRow(BaseModel):
    """One upstream row; unknown fields are refused so a format change is noticed."""

    model_config = ConfigDict(extra="forbid", strict=True)
    prompt: list[Message]
    completion: str
    rubric: str
    category: str
    binary_labels: list[bool]
    anonymized_physician_ids: list[str]
    prompt_id: str
    completion_id: str
    canary: str | None = None

    @field_validator("prompt")
    @classmethod
    def _conversation(cls, v: list[Message]) -> list[Message]:
        if not v:
            raise ValueError("prompt has no messages")
        return v

    @field_validator("rubric", "prompt_id", "completion_id")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    @model_validator(mode="after")
    def _one_label_per_physician(self) -> MetaEvalRow:
        if not self.binary_labels:
            raise ValueError("binary_labels is empty")
        if len(self.binary_labels) != len(self.anonymized_physician_ids):
            raise ValueError(
                f"{len(self.binary_labels)} binary_labels but "
                f"{len(self.anonymized_physician_ids)} anonymized_physician_ids"
            )
        if len(set(self.anonymized_physician_ids)) != len(self.anonymized_physician_ids):
            raise ValueError("a physician id appears twice in anonymized_physician_ids")
        return self


@dataclass(frozen=True)
class MetaEvalFile:
    """A located meta-evaluation file and where it came from."""

    path: Path
    origin: str  # "hub:<repo>@<revision>/<filename>" or the local path
    sha256: str


def locate(source: MetaEvalSource, config_dir: Path) -> MetaEvalFile:
    """Download (hub) or find (local file or hub-layout folder) the meta-eval file."""
    if source.repo_id is not None:
        from huggingface_hub import hf_hub_download

        path = Path(
            hf_hub_download(repo_id=source.repo_id, filename=source.file, repo_type="dataset", revision=source.revision)
        )
        origin = f"hub:{source.repo_id}@{source.revision}/{source.file}"
    else:
        path = resolve_path(source.path, config_dir)
        if path.is_dir():
            path = path / source.file
        if not path.is_file():
            raise FileNotFoundError(f"meta-evaluation file {path} does not exist")
        origin = str(path)
    return MetaEvalFile(path=path, origin=origin, sha256=sha256_file(path))


def read_meta_eval(path: Path) -> pl.DataFrame:
    """Parse and validate the jsonl file; a bad line raises naming file, line and reason."""
    records = []
    for line_no, raw in json_lines(path, "meta-evaluation file"):
        if not isinstance(raw, dict):
            raise InputError(f"{path}, line {line_no}: expected a JSON object")
        try:
            row = MetaEvalRow.model_validate(raw)
        except ValidationError as exc:
            reasons = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'row'}: {err['msg']}"
                for err in exc.errors(include_url=False)
            )
            raise InputError(f"{path}, line {line_no} (prompt_id {raw.get('prompt_id')!r}): {reasons}") from None
        records.append({"upstream_line": line_no, **row.model_dump()})
    if not records:
        raise InputError(f"{path}: no rows")
    return pl.DataFrame(records, schema=META_EVAL_SCHEMA)
