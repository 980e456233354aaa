"""Configuration of the leaderboards: what differs from the tracks' own statistics settings."""

from __future__ import annotations

from pydantic import Field

from mama_pipeline.common.settings_base import Section


class LeaderboardSettings(Section):
    # bootstrap and randomization-test resamples of the boards; unset: the track's own (`evaluation.resamples` for
    # mamaretrieval, `systems.resamples` for mamabench)
    resamples: int | None = Field(None, ge=100)
