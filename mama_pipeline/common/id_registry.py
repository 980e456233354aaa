"""Stable numbered ids (``q_00001``, ``mq_00001``...) that belong to a key for good.

A registry table maps keys to ids. A key already registered keeps its id; new
keys, taken in ascending order, get the next numbers after the largest ever
issued, and numbers are never reused, so a key that drops out leaves a gap and
adding other keys never renumbers existing ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class IdRegistry:
    prefix: str  # "q_"
    key: str  # registry column holding the key the id belongs to
    name: str  # for messages: "query id registry"
    id_word: str  # "query id"
    key_words: str  # "seed chunks"

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"^{re.escape(self.prefix)}(\d{{5,}})$")

    @property
    def schema(self) -> dict[str, type[pl.DataType]]:
        return {self.key: pl.String, "query_id": pl.String}

    def format(self, number: int) -> str:
        return f"{self.prefix}{number:05d}"

    def _number(self, query_id: str) -> int:
        m = self.pattern.match(query_id)
        if m is None:
            raise ValueError(f"{self.name} holds {query_id!r}, which is not {self.prefix}NNNNN")
        return int(m.group(1))

    def assign(self, keys: list[str], registry: pl.DataFrame | None) -> tuple[dict[str, str], pl.DataFrame]:
        """Ids for ``keys`` and the updated registry (sorted by id number)."""
        registry = registry if registry is not None else pl.DataFrame(schema=self.schema)
        known = dict(registry.select(self.key, "query_id").iter_rows())
        if len(set(known.values())) != len(known):
            raise ValueError(f"{self.name} gives one {self.id_word} to several {self.key_words}")
        next_number = max((self._number(q) for q in known.values()), default=0) + 1
        ids: dict[str, str] = {}
        for key in sorted(set(keys)):
            if key not in known:
                known[key] = self.format(next_number)
                next_number += 1
            ids[key] = known[key]
        updated = pl.DataFrame({self.key: list(known), "query_id": list(known.values())}, schema=self.schema)
        return ids, updated.sort(pl.col("query_id").str.slice(len(self.prefix)).cast(pl.Int64))
