"""The types of what a track adds to a release: hub viewer configs, release parts, single-table configurations.

Two kinds of contribution, both assembled by :mod:`mama_pipeline.release.parts`:

- a :class:`ConfigurationPart` of the mamaretrieval release (several files, a
  manifest section and a card section);
- a single-table :class:`ReleaseConfiguration` for either release (mamaretrieval
  or mamabench); in the mamaretrieval release each becomes a part (:meth:`as_part`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import polars as pl


class ViewerConfig(NamedTuple):
    """One hub configuration of a card: ``load_dataset(folder, name, split=split)`` reads ``path``."""

    name: str
    path: str
    description: str
    split: str = "test"


@dataclass(frozen=True)
class ConfigurationPart:
    name: str
    tables: dict[str, pl.DataFrame]  # release path -> frame (written as deterministic parquet)
    texts: dict[str, bytes] = field(default_factory=dict)  # release path -> bytes
    viewer_configs: tuple[tuple[str, ...], ...] = ()  # ViewerConfig fields: (name, release path, description[, split])
    card_section: str = ""  # Markdown appended to the dataset card
    manifest: dict[str, Any] = field(default_factory=dict)  # manifest["configurations"][name]


@dataclass(frozen=True)
class ReleaseConfiguration:
    name: str  # config_name in the card's YAML front matter
    path: str  # the file inside the release folder (.parquet or .jsonl)
    description: str
    frame: pl.DataFrame
    card_section: str = ""  # Markdown appended to the dataset card

    def as_part(self) -> ConfigurationPart:
        """The same table as a mamaretrieval release part."""
        return ConfigurationPart(
            self.name, {self.path: self.frame}, viewer_configs=(ViewerConfig(self.name, self.path, self.description),),
            card_section=self.card_section,
            manifest={"path": self.path, "rows": self.frame.height, "description": self.description})
