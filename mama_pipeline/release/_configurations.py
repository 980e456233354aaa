"""The types of what a track adds to a release: hub viewer configs, release parts, single-table configurations.

Two kinds of contribution, both assembled by :mod:`mama_pipeline.release._track_parts`:

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
    # under an active held-out rule: the held-out rows (tables, item-bearing texts, manifest) written to the
    # held-out folder, and the split's statement (id hashed, public_items, held_out_items); None: not split
    held_out: ConfigurationPart | None = None
    split: dict[str, Any] | None = None
    public_only: bool = False  # its files hold no held-out query's rows: allowed beside a held-out split


@dataclass(frozen=True)
class ReleaseConfiguration:
    name: str  # config_name in the card's YAML front matter
    path: str  # the file inside the release folder (.parquet or .jsonl)
    description: str
    frame: pl.DataFrame
    card_section: str = ""  # Markdown appended to the dataset card
    # mamaretrieval under an active held-out rule: the held-out rows (``frame`` holds the public ones) and the split
    held_out_frame: pl.DataFrame | None = None
    split: dict[str, Any] | None = None

    def as_part(self) -> ConfigurationPart:
        """The same table as a mamaretrieval release part (with its held-out rows when split)."""
        held = None
        if self.held_out_frame is not None:
            held = ConfigurationPart(
                self.name,
                {self.path: self.held_out_frame},
                manifest={"path": self.path, "rows": self.held_out_frame.height, "description": self.description},
            )
        return ConfigurationPart(
            self.name,
            {self.path: self.frame},
            viewer_configs=(ViewerConfig(self.name, self.path, self.description),),
            card_section=self.card_section,
            manifest={"path": self.path, "rows": self.frame.height, "description": self.description},
            held_out=held,
            split=self.split,
        )
