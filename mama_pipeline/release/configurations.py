"""Configurations other areas add to a release: one hub dataset configuration (file) each, plus a card section.

A provider is ``module:function`` taking (release name, store) and returning
the :class:`ReleaseConfiguration` list it adds to that release (empty when it
has nothing yet); it is imported when a release is written. ``PROVIDERS`` maps
each provider to the assets it reads, which the release assets wait for.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import polars as pl

from mama_pipeline.store import Store

PROVIDERS: dict[str, tuple[str, ...]] = {
    "mama_pipeline.clinician.release:configurations": ("clinician_validated", "clinician_agreement"),
}
DEPS = tuple(sorted({key for keys in PROVIDERS.values() for key in keys}))


@dataclass(frozen=True)
class ReleaseConfiguration:
    name: str  # config_name in the card's YAML front matter
    path: str  # the file inside the release folder (.parquet or .jsonl)
    description: str
    frame: pl.DataFrame
    card_section: str = ""  # Markdown appended to the dataset card


def extra_configurations(release: str, store: Store) -> list[ReleaseConfiguration]:
    out = []
    for spec in PROVIDERS:
        module, function = spec.split(":")
        out += getattr(importlib.import_module(module), function)(release, store)
    return sorted(out, key=lambda c: c.name)
