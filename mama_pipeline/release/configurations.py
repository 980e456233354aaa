"""Extra configurations of the mamaretrieval release, contributed by other areas.

A configuration is a set of files under its own folder of the release (hub
layout: one viewer config per table), a manifest section and a dataset-card
section. Each area registers one :class:`Configuration` in ``CONFIGURATIONS``:
the release asset depends on its ``assets`` and calls ``build`` (by import path,
so this module imports no area) with the settings, the store and the main
release inputs; ``build`` returns a :class:`ConfigurationPart`, or None when the
configuration is switched off.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

import polars as pl


@dataclass(frozen=True)
class ConfigurationPart:
    name: str
    tables: dict[str, pl.DataFrame]  # release path -> frame (written as deterministic parquet)
    texts: dict[str, bytes] = field(default_factory=dict)  # release path -> bytes
    viewer_configs: tuple[tuple[str, str, str], ...] = ()  # (config name, release path, description)
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
                  "mama_pipeline.robustness.release_config:robustness_part"),
)


def configuration_assets() -> list[str]:
    return sorted({a for c in CONFIGURATIONS for a in c.assets})
