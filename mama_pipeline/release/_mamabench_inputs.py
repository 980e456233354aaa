"""What the mamabench release is made from: the tables, the classifier that scoped them and the other areas' parts
(read by the release folder, ``_mamabench.py``, and its card, ``_mamabench_card.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from mama_pipeline.mamabench import AgreementStats


@dataclass
class ClassifierInfo:
    model: str
    prompt_id: str
    prompt_hash: str
    prompt_text: str
    smoke_test: bool  # answers came from the embedded smoke-test model


@dataclass
class ReleaseInputs:
    name: str
    version: str
    items: pl.DataFrame  # item_id, pool, set_type, category, item_json
    criteria: pl.DataFrame  # criterion_id, criterion, tags
    accounting: pl.DataFrame
    verdicts: pl.DataFrame
    yields: pl.DataFrame
    provenance: pl.DataFrame  # pool, origin, sha256, revision, rows, licence, location
    classifier: ClassifierInfo | None
    agreement: AgreementStats | None = None
    agreement_info: dict[str, Any] | None = None
    parity: AgreementStats | None = None
    calibration: pl.DataFrame | None = None
    extra: list[Any] = field(default_factory=list)  # other areas' release configurations
    widely_trained: list[str] = field(default_factory=list)  # pools widely used for training (card, manifest)
    held_out: dict[str, Any] | None = None  # the split's manifest entry when a held-out part was taken out
    circularity: list[dict[str, str]] = field(default_factory=list)  # graders' flags against systems (circularity/)
    extra_files: dict[str, bytes] = field(default_factory=dict)  # other areas' files (the leaderboard), public only
    card_sections: list[str] = field(default_factory=list)  # their card sections
    embedded_stages: list[str] = field(default_factory=list)  # stages the embedded smoke-test model served
