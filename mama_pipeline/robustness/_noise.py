"""Seeded character noise through the ``typo`` library.

typo (0.1.7) seeds Python's global ``random`` module in ``StrErrer(text, seed)``
and draws every position and keyboard neighbour from it, so one seed gives one
result byte for byte. The global state is saved and restored around each call,
so nothing else in the process sees a reseeded generator. (nlpaug 1.1.11 offers
only a process-wide ``Randomness.seed`` over random and numpy, which is why typo
is used here.)
"""

from __future__ import annotations

import hashlib
import random
import re

from mama_pipeline.robustness.settings import NoiseRates

EDITS = ("nearby_char", "missing_char", "repeated_char", "char_swap")  # the order edits are applied in
LETTER = re.compile(r"\w")


def variant_seed(seed: int, parent_id: str, kind: str) -> int:
    """A 63-bit seed of one (parent, kind): independent of every other query and kind."""
    digest = hashlib.sha256(f"{seed}|{parent_id}|{kind}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def add_noise(text: str, rates: NoiseRates, seed: int) -> tuple[str, dict[str, int]]:
    """``text`` with seeded typos, and how many edits of each kind were drawn."""
    from typo import StrErrer

    letters = len(LETTER.findall(text))
    counts_rng = random.Random(seed)
    counts = {edit: sum(counts_rng.random() < getattr(rates, edit) for _ in range(letters)) for edit in EDITS}
    saved = random.getstate()
    try:
        errer = StrErrer(text, seed=seed)
        for edit in EDITS:
            for _ in range(counts[edit]):
                getattr(errer, edit)()
        return errer.result, counts
    finally:
        random.setstate(saved)
