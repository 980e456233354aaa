"""The declared held-out split: a fixed share of a benchmark's items, chosen by a hash of each item's stable id and
a salt (BioMed Eval's declared hash rule).

An item is held out when ``int(sha256(salt + ":" + id).hexdigest()[:16], 16) / 16**16 < share``. Its side depends
on its own id and the salt alone, so adding or removing other items never moves it; the held-out count is
binomial around ``share x items``. The rule, share and salt are recorded in both manifests; the held-out part is
written to ``<data_dir>/releases/<name>-held-out/<version>``, a folder the maintainer keeps private.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

RULE = 'held out iff int(sha256(salt + ":" + id).hexdigest()[:16], 16) / 16**16 < share'
HEX_DIGITS = 16
PUBLIC, HELD_OUT = "public", "held_out"
Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)


def hash_position(item_id: str, salt: str) -> float:
    """The id's position in [0, 1) under the salt."""
    digest = hashlib.sha256(f"{salt}:{item_id}".encode()).hexdigest()[:HEX_DIGITS]
    return int(digest, 16) / 16**HEX_DIGITS


@dataclass(frozen=True)
class HeldOutRule:
    share: float  # 0 <= share < 1; 0: nothing is held out
    salt: str
    id_field: str  # the stable id the rule hashes: query_id (mamaretrieval), item_id (mamabench)

    @property
    def active(self) -> bool:
        return self.share > 0

    def is_held_out(self, item_id: str) -> bool:
        return hash_position(item_id, self.salt) < self.share

    def held_ids(self, ids: pl.Series) -> set[str]:
        return {i for i in ids.unique().to_list() if self.is_held_out(i)}

    def part_of(self, ids: pl.Series) -> pl.Series:
        """``public`` or ``held_out`` for each id."""
        return pl.Series("part", [HELD_OUT if self.is_held_out(i) else PUBLIC for i in ids.to_list()], dtype=pl.String)

    def split(self, df: Frame, column: str | None = None) -> tuple[Frame, Frame]:
        """(public rows, held-out rows) of ``df`` (a frame, or a lazy frame: its ids are read, its rows stay
        lazy) by its ``column`` (default: the rule's id field)."""
        ids = df.lazy().select(pl.col(column or self.id_field).unique()).collect().to_series()
        mask = pl.col(column or self.id_field).is_in(sorted(self.held_ids(ids)))
        return df.filter(~mask), df.filter(mask)

    def manifest(self, public: int, held_out: int) -> dict[str, Any]:
        """What both manifests record of the split, with the item counts on each side."""
        return {
            "rule": RULE,
            "share": self.share,
            "salt": self.salt,
            "id": self.id_field,
            "public_items": public,
            "held_out_items": held_out,
        }


def configuration_split(items: str, by: str, public: int, held_out: int) -> dict[str, Any]:
    """A configuration's statement of its split (``ConfigurationPart.split``): what its items are, which id the
    rule hashed, and the item counts on each side."""
    return {"items": items, "id": by, "public_items": public, "held_out_items": held_out}


def held_out_path(public_folder: Path, name: str) -> Path:
    """``<releases>/<name>/<version>`` -> ``<releases>/<name>-held-out/<version>``."""
    return public_folder.parent.parent / f"{name}-held-out" / public_folder.name
