"""The graph's partitions, all here: per retriever, per query shard, per system (from the settings), per submission.

:mod:`mama_pipeline.definitions` builds them from the settings it loaded once and hands them to the areas'
``build_defs``; the assets are declared unpartitioned at module level and take their partitions from
:func:`partitioned`, so what a run executes and what the graph shows come from one configuration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

if TYPE_CHECKING:
    from mama_pipeline.settings import PipelineSettings


def shard_keys(shards: int) -> list[str]:
    """The judging partitions' keys: ``shard_000`` ... for ``judging.shards`` query shards."""
    return [f"shard_{i:03d}" for i in range(shards)]


@dataclass(frozen=True)
class Partitions:
    retrievers: dg.StaticPartitionsDefinition  # rankings, multipassage_rankings, variant_rankings: one per retriever
    shards: dg.StaticPartitionsDefinition  # judged_labels: one per query shard
    systems: dg.StaticPartitionsDefinition  # system_answers, system_grades: one per configured system

    @classmethod
    def of(cls, settings: PipelineSettings) -> Partitions:
        return cls(
            retrievers=dg.StaticPartitionsDefinition(settings.retrieval.retriever_names),
            shards=dg.StaticPartitionsDefinition(shard_keys(settings.judging.shards)),
            systems=dg.StaticPartitionsDefinition(list(settings.systems.names)),
        )


SUBMISSIONS = dg.DynamicPartitionsDefinition(name="submissions")  # submission_scores: one per submission (`submit`)


def partitioned(
    assets: Iterable[dg.AssetsDefinition],
    partitions_def: dg.PartitionsDefinition,
) -> list[dg.AssetsDefinition]:
    """The assets with every output partitioned by ``partitions_def``."""
    return [a.map_asset_specs(lambda spec: spec.replace_attributes(partitions_def=partitions_def)) for a in assets]
