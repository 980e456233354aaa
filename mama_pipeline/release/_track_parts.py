"""What the tracks add to the releases, imported directly: the release is the last stage and reads every area.

- mamaretrieval parts (``MAMARETRIEVAL_PARTS``): each builder takes (settings, store, the main release inputs)
  and returns a :class:`ConfigurationPart`, or None when its track is switched off;
- single-table configurations of either release (:func:`extra_configurations`): the clinician-validated subset.

``PART_ASSETS`` are the assets the mamaretrieval release reads through its parts (its Dagster deps);
``EXTRA_ASSETS`` those of the single-table configurations (deps of both releases).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from mama_pipeline.release import _clinician_part as clinician_part
from mama_pipeline.release._configurations import ConfigurationPart, ReleaseConfiguration
from mama_pipeline.release._leaderboard_part import mamaretrieval_part as leaderboard_part
from mama_pipeline.release._multipassage_part import multipassage_part
from mama_pipeline.release._robustness_part import robustness_part
from mama_pipeline.store import Store

if TYPE_CHECKING:
    from mama_pipeline.release._mamaretrieval import MamaretrievalInputs
    from mama_pipeline.settings import PipelineSettings


class Part(NamedTuple):
    name: str
    assets: tuple[str, ...]  # asset keys the part is built from
    build: Callable[[PipelineSettings, Store, MamaretrievalInputs], ConfigurationPart | None]


MAMARETRIEVAL_PARTS: tuple[Part, ...] = (
    Part("robustness", ("query_variants", "variant_decisions", "variant_labels", "variant_rankings"), robustness_part),
    Part(
        "multipassage",
        (
            "multipassage_questions",
            "multipassage_decisions",
            "multipassage_labels",
            "multipassage_fact_labels",
            "multipassage_scoreboard",
            "multipassage_rankings",
        ),
        multipassage_part,
    ),
    Part("leaderboard", ("mamaretrieval_leaderboard",), leaderboard_part),
)
EXTRA_ASSETS: tuple[str, ...] = ("clinician_agreement", "clinician_estimates", "clinician_validated")


def mamaretrieval_parts(
    settings: PipelineSettings,
    store: Store,
    inputs: MamaretrievalInputs,
) -> list[ConfigurationPart]:
    """The tracks' parts (in ``MAMARETRIEVAL_PARTS`` order), then the single-table configurations by name."""
    parts = [p for part in MAMARETRIEVAL_PARTS if (p := part.build(settings, store, inputs)) is not None]
    return parts + [c.as_part() for c in extra_configurations("mamaretrieval", store, settings)]


def extra_configurations(release: str, store: Store, settings: PipelineSettings) -> list[ReleaseConfiguration]:
    """The single-table configurations of ``release`` (mamaretrieval or mamabench), sorted by name."""
    return sorted(clinician_part.configurations(release, store, settings), key=lambda c: c.name)


def part_assets() -> list[str]:
    """Every asset the mamaretrieval release's parts and configurations read."""
    return sorted({a for p in MAMARETRIEVAL_PARTS for a in p.assets} | set(EXTRA_ASSETS))
