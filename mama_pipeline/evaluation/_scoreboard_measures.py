"""What a measure is, as data: its family (paper label, provider, 0/1 or graded), and a scoreboard's measures,
families x relevance cuts x cutoffs.

Binary-relevance families (HR, MRR, P, R) are evaluated once per relevance cut (ir_measures
``rel=``); nDCG uses the graded label as gain; wHR and wP are threshold-free
(label / max grade) and need a maximum grade; Judged@k is label coverage.
Families are listed robust-first, which is the order of the scoreboard. The multi-passage
track's families (``TRACK_FAMILIES``) are scored on its facts qrels
(``multipassage/_multipassage_measures.py``). Every board reads which stored measure is 0/1 from
here (:func:`zero_one_measures`): adding a measure is one ``Family`` row (and its computation
where the provider is the pipeline's own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import ir_measures


@dataclass(frozen=True)
class Family:
    key: str  # the paper label's stem (a track family: its stored name without parameters and cutoff)
    kind: str  # binary (relevance cut) | graded | weighted | coverage | facts (multi-passage track)
    at_k: bool
    robust: bool
    ir_name: str | None  # ir_measures measure name; None for the pipeline's own (computed in code)
    zero_one: bool = False  # per-query values are 0/1 by definition: exact McNemar beside the randomization test

    @property
    def provider(self) -> str:
        return "own" if self.ir_name is None else "ir_measures"


FAMILIES: tuple[Family, ...] = (
    Family("HR", "binary", True, True, "Success", zero_one=True),
    Family("MRR", "binary", False, True, "RR"),
    Family("wHR", "weighted", True, True, None),
    Family("nDCG", "graded", True, False, "nDCG"),
    Family("P", "binary", True, False, "P"),
    Family("R", "binary", True, False, "R"),
    Family("wP", "weighted", True, False, None),
    Family("Judged", "coverage", True, False, "Judged"),
)
FAMILY_BY_KEY = {f.key: f for f in FAMILIES}
TRACK_FAMILIES: tuple[Family, ...] = (
    Family("alpha_nDCG", "facts", True, False, "alpha_nDCG"),
    Family("R[pieces]", "facts", True, False, "StRecall"),  # pyndeval subtopic recall, stored as R@k[pieces]
    Family("AllIn[pieces]", "facts", True, False, None, zero_one=True),  # 1 when that recall is 1
)
_STORED = {f.ir_name or f.key: f for f in FAMILIES} | {f.key: f for f in TRACK_FAMILIES}
_STORED_NAME = re.compile(r"^(?P<stem>[A-Za-z_]+)(?:\([^)]*\))?(?:@\d+)?(?P<suffix>\[[a-z]+\])?$")


def measure_family(name: str) -> Family:
    """The family of a stored measure name (``Success(rel=3)@5``, ``wHR@5``, ``AllIn@10[pieces]``); an unknown
    one is an error naming the known stems."""
    hit = _STORED_NAME.match(name)
    family = _STORED.get(hit["stem"] + (hit["suffix"] or "")) if hit else None
    if family is None:
        raise ValueError(f"measure {name!r} is of no known family; known: {sorted(_STORED)}")
    return family


def zero_one_measures(names: Iterable[str]) -> set[str]:
    """The names among ``names`` whose family is 0/1 by definition (never inferred from the values)."""
    return {name for name in names if measure_family(name).zero_one}


@dataclass(frozen=True)
class Measure:
    """One scoreboard column; ``name`` is ir_measures' canonical string (or wHR@k / wP@k)."""

    name: str
    family: str
    cut: str  # relevance-cut label ("lenient", "strict"; "" when the plan has one unnamed cut)
    rel: int | None  # minimum relevant label of a binary measure
    k: int | None
    label: str
    position: int

    @property
    def ir(self) -> Any:
        """The ir_measures measure object (None for wHR / wP)."""
        return None if FAMILY_BY_KEY[self.family].ir_name is None else ir_measures.parse_measure(self.name)

    @property
    def binary(self) -> bool:
        """Per-query values are 0/1 (the input of an exact McNemar test): the family's ``zero_one``."""
        return FAMILY_BY_KEY[self.family].zero_one


@dataclass(frozen=True)
class MeasurePlan:
    """Which measures a scoreboard reports.

    ``cuts`` maps a cut label to the minimum relevant label; ``max_grade`` is the
    top label (wHR / wP divide by it; None leaves them out).
    """

    cutoffs: tuple[int, ...]
    cuts: tuple[tuple[str, int], ...]
    max_grade: int | None = None
    families: tuple[str, ...] = tuple(f.key for f in FAMILIES)

    def __post_init__(self) -> None:
        unknown = set(self.families) - set(FAMILY_BY_KEY)
        if unknown:
            raise ValueError(f"unknown measure families {sorted(unknown)}; known: {list(FAMILY_BY_KEY)}")
        if not self.cutoffs or min(self.cutoffs) < 1:
            raise ValueError(f"cutoffs must be positive integers, got {self.cutoffs}")
        if not self.cuts or min(rel for _, rel in self.cuts) < 1:
            raise ValueError(f"relevance cuts must be >= 1, got {self.cuts}")

    def measures(self) -> list[Measure]:
        out: list[Measure] = []
        for family in FAMILIES:
            if family.key not in self.families:
                continue
            if family.kind == "weighted" and self.max_grade is None:
                continue
            cuts = self.cuts if family.kind == "binary" else (("", None),)
            ks = sorted(set(self.cutoffs)) if family.at_k else [None]
            for cut, rel in cuts:
                for k in ks:
                    out.append(_measure(family, cut, rel, k, len(out)))
        return out

    def by_name(self) -> dict[str, Measure]:
        return {m.name: m for m in self.measures()}

    @property
    def relevant_at(self) -> int:
        """Lowest label that counts as relevant under any cut."""
        return min(rel for _, rel in self.cuts)


def _measure(family: Family, cut: str, rel: int | None, k: int | None, position: int) -> Measure:
    at = f"@{k}" if k is not None else ""
    if family.ir_name is None:
        name = f"{family.key}{at}"
    else:
        params = "" if rel is None else f"(rel={rel})"
        name = str(ir_measures.parse_measure(f"{family.ir_name}{params}{at}"))
    label = f"{family.key}{at}" + (f" {cut}" if cut else "")
    return Measure(name=name, family=family.key, cut=cut, rel=rel, k=k, label=label, position=position)


def mamaretrieval_plan(cutoffs: list[int], lenient: int, strict: int, max_grade: int = 6) -> MeasurePlan:
    """Graded 0..6 labels, lenient and strict cuts."""
    return MeasurePlan(tuple(cutoffs), (("lenient", lenient), ("strict", strict)), max_grade)


def beir_plan(cutoffs: list[int], rel: int = 1) -> MeasurePlan:
    """BEIR qrels: one relevance cut, no weighted measures."""
    return MeasurePlan(tuple(cutoffs), (("", rel),), None)
