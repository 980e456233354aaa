"""The run the mamaretrieval steps score: the configured retrievers' stored rankings and the run files.

The rankings (one store partition per retriever) are read a slice of queries at a time, or one retriever at a
time for its run file, so memory grows with a slice, not with the pool; the run files are held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from mama_pipeline.common.slices import SLICE, id_slices
from mama_pipeline.evaluation._runs import RUN_SCHEMA, rankings_to_run
from mama_pipeline.retrieval import RANKINGS_TABLE as RANKINGS
from mama_pipeline.retrieval import StoredRankings
from mama_pipeline.store import PARTITION_COLUMN

if TYPE_CHECKING:
    from mama_pipeline.store import Store

RUN_COLUMNS = ["retriever", "query_id", "chunk_id", "rank"]  # what a run reads of the rankings


def ranked_retrievers(store: Store, names: list[str]) -> list[str]:
    """The retrievers of these rankings partitions; an error names partitions never materialised."""
    found = StoredRankings(store, names).present() if names and store.table_exists(RANKINGS) else []
    missing = sorted(set(names) - set(found))
    if missing:
        raise ValueError(f"rankings of {missing} are not in the store: materialise those rankings partitions first")
    return found


@dataclass
class StoredRun:
    """The rankings partitions ``names`` and the run files ``extra`` (retriever, query_id, doc_id, rank), one run;
    errors name partitions never materialised and run files reusing a ranking's retriever name."""

    store: Store
    names: list[str]
    extra: pl.DataFrame | None = None
    retrievers: list[str] = field(init=False)  # every retriever of the run, sorted

    def __post_init__(self):
        ranked = ranked_retrievers(self.store, self.names)
        if self.extra is not None:
            self.extra = self.extra.select([pl.col(c).cast(t) for c, t in RUN_SCHEMA.items()])
            clash = set(self.extra["retriever"].unique().to_list()) & set(ranked)
            if clash:
                raise ValueError(f"run files reuse retriever names of the rankings table: {sorted(clash)}")
            ranked = [*ranked, *self.extra["retriever"].unique().to_list()]
        self.retrievers = sorted(set(ranked))

    def of_queries(self, ids: list[str]) -> pl.DataFrame:
        """The run rows of these queries."""
        return self._read("query_id", ids)

    def of_retriever(self, name: str) -> pl.DataFrame:
        """One retriever's run rows."""
        return self._read("retriever", [name])

    def query_ids(self) -> list[str]:
        """Every query the run ranks, sorted."""
        stored = StoredRankings(self.store, self.names).query_ids() if self.names else []
        extra = self.extra["query_id"].to_list() if self.extra is not None else []
        return sorted({*stored, *extra})

    def slices(self, ids: list[str], size: int = SLICE) -> Iterator[pl.DataFrame]:
        """The run rows of ``ids``, ``size`` queries at a time."""
        for part in id_slices(ids, size):
            yield self.of_queries(part)

    def rows_outside(self, query_ids: list[str]) -> int:
        """How many run rows are of queries outside ``query_ids`` (the stored ones counted by the store)."""
        stored = 0
        if self.names:
            sql = (
                f'SELECT count(*) AS n FROM "{RANKINGS}" WHERE "{PARTITION_COLUMN}" IN (SELECT unnest(?)) '
                'AND "query_id" NOT IN (SELECT unnest(?))'
            )
            stored = self.store.query(sql, [self.names, list(query_ids)])["n"].item()
        extra = 0 if self.extra is None else self.extra.filter(~pl.col("query_id").is_in(list(query_ids))).height
        return stored + extra

    def _read(self, column: str, values: list[str]) -> pl.DataFrame:
        ranked = (
            rankings_to_run(self.store.read_table(RANKINGS, self.names, RUN_COLUMNS, {column: values}))
            if self.names
            else pl.DataFrame(schema=RUN_SCHEMA)
        )
        return ranked if self.extra is None else pl.concat([ranked, self.extra.filter(pl.col(column).is_in(values))])
