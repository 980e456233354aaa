"""Configurations other areas add to a release: their own files, viewer configs and card sections.

Two kinds of contribution:

- a :class:`Configuration` of the mamaretrieval release (several files, a
  manifest section and a card section), registered in ``CONFIGURATIONS``: the
  release asset depends on its ``assets`` and calls ``build`` (by import path,
  so this module imports no area) with the settings, the store and the main
  release inputs; ``build`` returns a :class:`ConfigurationPart`, or None when
  the configuration is switched off;
- a provider of single-table :class:`ReleaseConfiguration` entries for either
  release (mamaretrieval or mamabench), registered in ``PROVIDERS`` as
  ``module:function`` taking (release name, store, settings) and mapped to the assets it
  reads; in the mamaretrieval release each becomes a part (:meth:`as_part`).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import polars as pl

from mama_pipeline.store import Store

if TYPE_CHECKING:
    from mama_pipeline.settings import PipelineSettings


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
class Configuration:
    name: str
    assets: tuple[str, ...]  # asset keys the configuration is built from
    build: str  # "module:function" (settings, store, MamaretrievalInputs) -> ConfigurationPart | None

    def builder(self):
        module, function = self.build.split(":")
        return getattr(importlib.import_module(module), function)


CONFIGURATIONS: tuple[Configuration, ...] = (
    Configuration("robustness", ("query_variants", "variant_decisions", "variant_labels", "variant_rankings"),
                  "mama_pipeline.release.robustness_part:robustness_part"),
    Configuration("multipassage", ("multipassage_questions", "multipassage_decisions", "multipassage_labels",
                                   "multipassage_fact_labels", "multipassage_scoreboard", "multipassage_rankings"),
                  "mama_pipeline.release.multipassage_part:multipassage_part"),
)


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


PROVIDERS: dict[str, tuple[str, ...]] = {
    "mama_pipeline.release.clinician_part:configurations": ("clinician_validated", "clinician_agreement",
                                                       "clinician_estimates"),
}
DEPS = tuple(sorted({key for keys in PROVIDERS.values() for key in keys}))


def extra_configurations(release: str, store: Store, settings: "PipelineSettings") -> list[ReleaseConfiguration]:
    out = []
    for spec in PROVIDERS:
        module, function = spec.split(":")
        out += getattr(importlib.import_module(module), function)(release, store, settings)
    return sorted(out, key=lambda c: c.name)


def configuration_assets() -> list[str]:
    """Every asset the mamaretrieval release's configurations read."""
    return sorted({a for c in CONFIGURATIONS for a in c.assets} | set(DEPS))
