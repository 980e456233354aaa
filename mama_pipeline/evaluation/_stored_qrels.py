"""The judged labels the mamaretrieval steps score against, read from the store a slice of queries at a time.

The judgments table (one row per labelled pooled pair) grows with the pool; a step reads the qrels of the queries
it scores now, and lets the store count and aggregate the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from mama_pipeline.evaluation._judged_scoreboard import judged_qrels

if TYPE_CHECKING:
    from mama_pipeline.store import Store

JUDGMENTS = "judgments"  # the judging group's asset and table
QRELS_COLUMNS = ["query_id", "chunk_id", "score"]  # what judged_qrels reads of the judgments
ROW_SLICE = 100_000  # judgments read at a time in the table's order


@dataclass
class StoredQrels:
    """Qrels (query_id, doc_id, relevance) of the stored judgments; ``dropped`` tallies the rows left out of the
    qrels read so far (reason -> rows)."""

    store: Store
    dropped: dict[str, int] = field(default_factory=dict)

    def of_queries(self, ids: list[str]) -> pl.DataFrame:
        """The qrels of these queries, in the table's order."""
        return self._qrels(self.store.read_table(JUDGMENTS, columns=QRELS_COLUMNS, where={"query_id": ids}))

    def in_table_order(self, size: int = ROW_SLICE) -> Iterator[pl.DataFrame]:
        """Every qrel, in the table's order, read ``size`` table rows at a time."""
        end = self.store.query(f'SELECT coalesce(max(rowid) + 1, 0) AS n FROM "{JUDGMENTS}"')["n"].item()
        sql = f'SELECT {", ".join(QRELS_COLUMNS)} FROM "{JUDGMENTS}" WHERE rowid >= ? AND rowid < ? ORDER BY rowid'
        for start in range(0, end, size):
            yield self._qrels(self.store.query(sql, [start, start + size]))

    def query_ids(self) -> list[str]:
        """The judged queries, sorted."""
        return self.store.query(f'SELECT DISTINCT query_id FROM "{JUDGMENTS}"')["query_id"].sort().to_list()

    def judged_at(self, at: int) -> pl.DataFrame:
        """The judgments (QRELS_COLUMNS) labelled ``at`` or more, in the table's order."""
        sql = f'SELECT {", ".join(QRELS_COLUMNS)} FROM "{JUDGMENTS}" WHERE score >= ? ORDER BY rowid'
        return self.store.query(sql, [at])

    def relevant(self, at: int) -> pl.DataFrame:
        """The qrels labelled ``at`` or more, in the table's order."""
        return judged_qrels(self.judged_at(at))[0]

    def best(self) -> pl.DataFrame:
        """(query_id, best): each labelled query's highest label."""
        sql = f'SELECT query_id, max(score)::BIGINT AS best FROM "{JUDGMENTS}" GROUP BY query_id ORDER BY query_id'
        return self.store.query(sql)

    def count(self) -> int:
        """How many judged pairs hold a label."""
        return self.store.query(f'SELECT count(*) AS n FROM "{JUDGMENTS}" WHERE score IS NOT NULL')["n"].item()

    def counts(self) -> pl.DataFrame:
        """(relevance, count): the judged pairs per label."""
        sql = f'SELECT score AS relevance, count(*) AS count FROM "{JUDGMENTS}" WHERE score IS NOT NULL GROUP BY score'
        return self.store.query(sql).select(pl.col("relevance").cast(pl.Int64), pl.col("count").cast(pl.UInt32))

    def judged_by(self) -> pl.DataFrame:
        """The distinct (judge_model, prompt_hash) of the labels."""
        return self.store.query(f'SELECT DISTINCT judge_model, prompt_hash FROM "{JUDGMENTS}" ORDER BY ALL')

    def outside(self, query_ids: list[str]) -> int:
        """How many labelled pairs are of queries outside ``query_ids``."""
        sql = f'SELECT count(*) AS n FROM "{JUDGMENTS}" WHERE query_id NOT IN (SELECT unnest(?))'
        return self.store.query(sql, [list(query_ids)])["n"].item()

    def _qrels(self, judgments: pl.DataFrame) -> pl.DataFrame:
        """Qrels of some judgments, their dropped rows tallied."""
        qrels, dropped = judged_qrels(judgments)
        for reason, n in dropped.items():
            self.dropped[reason] = self.dropped.get(reason, 0) + n
        return qrels
