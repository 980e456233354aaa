"""Configuration of the robustness track: which query variants are made, and how."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mama_pipeline.common.settings_base import Section

KIND_PATTERN = r"^[a-z][a-z0-9_]*$"  # part of a variant id: q_00042~typo


class NoiseRates(Section):
    """Expected character edits per letter (word character) of the query, one rate per edit.

    Each edit's count is drawn from Binomial(letters, rate) with the variant's seed and
    applied by the ``typo`` library (keyboard layout ``en_default``).
    """

    nearby_char: float = Field(0.015, ge=0, le=0.5)  # keyboard-adjacent substitution
    missing_char: float = Field(0.01, ge=0, le=0.5)  # dropped letter
    repeated_char: float = Field(0.005, ge=0, le=0.5)  # doubled letter
    char_swap: float = Field(0.01, ge=0, le=0.5)  # transposition of two neighbouring letters


class KindSettings(Section):
    """One kind of variant: deterministic ``steps`` applied in order, or one LLM ``rewrite`` style."""

    name: str = Field(pattern=KIND_PATTERN)
    steps: list[Literal["shorthand", "noise"]] = Field(default_factory=list)
    rewrite: Literal["telegraphic", "codeswitch"] | None = None

    @model_validator(mode="after")
    def _one_recipe(self):
        if bool(self.steps) == bool(self.rewrite):
            raise ValueError(f"kind {self.name!r}: give either steps (shorthand, noise) or rewrite, not both or none")
        return self


DEFAULT_KINDS = [
    KindSettings(name="typo", steps=["noise"]),
    KindSettings(name="shorthand", steps=["shorthand"]),
    KindSettings(name="hurried", steps=["shorthand", "noise"]),
    KindSettings(name="telegraphic", rewrite="telegraphic"),
    KindSettings(name="codeswitch", rewrite="codeswitch"),
]


class RobustnessSettings(Section):
    kinds: list[KindSettings] = Field(default_factory=lambda: list(DEFAULT_KINDS))
    seed: int = 20250801  # noise seeds derive from it, the parent id and the kind
    noise: NoiseRates = NoiseRates()
    abbreviations: str | None = None  # TSV (long_form, short_form); default: the bundled reviewed table
    rewrite_queries: int | None = Field(None, ge=0)  # LLM kinds: None = every query, N = the first N in seeded order
    max_rewrite_words: int = Field(40, ge=1)  # a longer rewrite is rejected (too_long)
    keep_when_gate_fails: bool = False  # a rewrite whose gate answer failed is kept only when true
    retrievers: list[str] = Field(default_factory=list)  # empty: every registry retriever
    judge_depth: int | None = Field(None, ge=1)  # holes judged in each clean and variant top-k; None: pool_depth
    max_hole_pairs: int | None = Field(None, ge=0)  # None: every hole; N: the N at the best ranks
    # a comparison is flagged when its clean and variant mean Judged@k differ by more than this
    coverage_tolerance: float = Field(0.05, ge=0, le=1)
    resamples: int | None = Field(None, ge=100)  # bootstrap / randomization resamples; None: evaluation.resamples
    release: bool = False  # ship the variants as the ``robustness`` configuration of the mamaretrieval release

    @model_validator(mode="after")
    def _unique(self):
        names = [k.name for k in self.kinds]
        if len(set(names)) != len(names):
            raise ValueError(f"robustness kind names must be unique: {names}")
        return self
