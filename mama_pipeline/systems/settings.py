"""Configuration of the answering systems under evaluation and of how they are scored.

Each entry of ``systems.entries`` is one system: the same endpoint and decoding
keys as an ``llm.*`` stage (``max_failure_rate`` bounds the share of a track's
items it may leave unanswered), a system prompt, and a mode (``closed_book``, or
``rag`` with a registry retriever of ``retrieval.retrievers`` and ``k``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.retrieval.settings import kinds_that

NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"  # a Dagster partition key and a file name
TRACKS = ("mcq", "short_answer", "rubric")
Track = Literal["mcq", "short_answer", "rubric"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a clinical assistant for nurse-midwives in maternal, neonatal, child and "
    "reproductive health. Answer accurately and concisely."
)


class SystemSettings(StageSettings):
    """One answering system: an OpenAI-compatible endpoint, a system prompt and a mode."""

    name: str = Field(pattern=NAME_PATTERN)
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    mode: Literal["closed_book", "rag"] = "closed_book"
    retriever: str | None = None  # rag: a name in retrieval.retrievers
    k: int = Field(5, ge=1)  # rag: chunks put into the prompt
    mcq_output: Literal["json_schema", "text"] = "json_schema"  # text: the simple-evals extraction rule
    tracks: list[Track] = Field(default_factory=lambda: list(TRACKS))
    baseline: str | None = None  # rag: the closed-book system it is compared with

    @model_validator(mode="after")
    def _mode(self) -> SystemSettings:
        if self.mode == "rag" and not self.retriever:
            raise ValueError(f"system {self.name!r}: mode rag needs 'retriever'")
        if self.mode == "closed_book" and (self.retriever or self.baseline):
            raise ValueError(f"system {self.name!r}: 'retriever' and 'baseline' apply to mode rag only")
        if not self.tracks or len(set(self.tracks)) != len(self.tracks):
            raise ValueError(f"system {self.name!r}: 'tracks' must list each track once, at least one")
        return self


class SystemsSettings(Section):
    entries: list[SystemSettings] = Field(default_factory=list)
    items_per_track: int = Field(0, ge=0)  # a seeded sample of each track's items (0 = every item)
    max_rubric_criteria: int = Field(0, ge=0)  # rubric items with more criteria are left out (0 = none)
    sample_seed: int = 0
    # items a system left unanswered (transport failures only; its own output that cannot be graded always
    # scores 0): the headline mean leaves them out (exclude) or counts them as 0 (score_zero); the board shows
    # both means, and a system over its max_failure_rate is refused either way
    answer_failures: Literal["exclude", "score_zero"] = "exclude"
    resamples: int = Field(2000, ge=100)  # bootstrap and randomization resamples
    seed: int = 0
    confidence: float = Field(0.95, gt=0, lt=1)
    alpha: float = Field(0.05, gt=0, lt=1)

    @model_validator(mode="after")
    def _consistent(self) -> SystemsSettings:
        names = [s.name for s in self.entries]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"system names must be unique; repeated: {dupes}")
        by_name = {s.name: s for s in self.entries}
        for s in self.entries:
            if s.baseline is not None and (s.baseline not in by_name or by_name[s.baseline].mode != "closed_book"):
                raise ValueError(f"system {s.name!r}: baseline {s.baseline!r} must name a closed_book system")
        return self

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.entries]

    def system(self, name: str) -> SystemSettings:
        for s in self.entries:
            if s.name == name:
                return s
        raise KeyError(f"no system named {name!r} in systems.entries; known: {self.names}")

    def check_retrievers(self, retrievers: dict[str, str]) -> None:
        """Every rag system names a configured retriever of a kind that ranks free query text on its own."""
        rag_kinds = kinds_that("answers_free_text")
        for s in self.entries:
            if s.mode != "rag":
                continue
            if s.retriever not in retrievers:
                raise ValueError(
                    f"systems.entries {s.name!r}: retriever {s.retriever!r} is not in retrieval.retrievers "
                    f"{sorted(retrievers)}"
                )
            if retrievers[s.retriever] not in rag_kinds:
                raise ValueError(
                    f"systems.entries {s.name!r}: retriever {s.retriever!r} is of kind "
                    f"{retrievers[s.retriever]!r}; a system needs one of {rag_kinds}"
                )
