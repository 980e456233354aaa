"""The mamaretrieval tables as files (``mama-pipeline eval export``): a BEIR folder, TREC qrels, a TREC run per
retriever and the per-query files.

Nothing that grows with the pool is held whole: the labels are read a slice of queries (or of the table's rows) at
a time, the corpus a slice of chunks at a time, the rankings one retriever at a time, and the per-query values are
scored a retriever and slice of queries at a time and held for one retriever's file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from mama_pipeline.common.slices import SLICE, id_slices
from mama_pipeline.evaluation._beir import (
    MAMARETRIEVAL_METADATA,
    mamaretrieval_documents,
    mamaretrieval_labels,
    mamaretrieval_queries,
    write_beir_parts,
)
from mama_pipeline.evaluation._judged_scoreboard import scoring_plan
from mama_pipeline.evaluation._per_query_files import write_per_query_files
from mama_pipeline.evaluation._per_query_scoring import (
    PER_QUERY_SCHEMA,
    RunOf,
    per_query_blocks,
)
from mama_pipeline.evaluation._runs import rankings_to_run
from mama_pipeline.evaluation._stored_qrels import JUDGMENTS, ROW_SLICE, StoredQrels
from mama_pipeline.evaluation._stored_run import RANKINGS, RUN_COLUMNS
from mama_pipeline.evaluation._trec import write_trec_qrels, write_trec_run
from mama_pipeline.retrieval import StoredRankings

if TYPE_CHECKING:
    from mama_pipeline.evaluation.settings import EvaluationSettings
    from mama_pipeline.store import Store

CHUNKS = "corpus_chunks"
QUERIES = "generated_queries"
CHUNK_SLICE = 50_000  # corpus chunks written at a time
SCORED_RUN_COLUMNS = [*RUN_COLUMNS, "score"]  # what a run file reads of the rankings


def export_mamaretrieval(
    store: Store,
    settings: EvaluationSettings,
    out: Path,
    query_slice: int = SLICE,
    row_slice: int = ROW_SLICE,
    chunk_slice: int = CHUNK_SLICE,
) -> dict[str, object]:
    """Write ``beir/``, ``qrels.txt``, ``runs/<retriever>.txt`` and ``per_query/`` under ``out``; returns the counts
    of documents, queries and qrels, the judgments left out of the qrels and the retrievers.

    Every retriever of the rankings table is written; the per-query files score the generated queries only.
    """
    for table in (JUDGMENTS, CHUNKS, QUERIES):
        store.columns(table)  # a missing table is named before anything is written
    queries = mamaretrieval_queries(store.read_table(QUERIES, columns=_query_columns(store)))
    query_ids = queries["query_id"].to_list()
    chunk_ids = store.query(f'SELECT chunk_id FROM "{CHUNKS}"')["chunk_id"].sort().to_list()
    labels = StoredQrels(store)  # its tally: of one pass over every judgment
    write_beir_parts(
        out / "beir",
        (_documents(store, part) for part in id_slices(chunk_ids, chunk_slice)),
        [queries],
        _sorted_labels(store, labels, set(query_ids), query_slice),
    )
    write_trec_qrels(StoredQrels(store).in_table_order(row_slice), out / "qrels.txt")
    names = _retrievers(store)
    for name in names:
        write_trec_run(_scored_run(store, name), out / "runs" / f"{name}.txt")
    plan = scoring_plan(settings)
    scored = StoredQrels(store)

    def values_of(name: str) -> pl.DataFrame:
        blocks = per_query_blocks(
            _run_of(store, name), scored.of_queries, query_ids, plan, [name], RANKINGS, JUDGMENTS, query_slice
        )
        return pl.concat([pl.DataFrame(schema=PER_QUERY_SCHEMA), *blocks])

    write_per_query_files(
        values_of,
        names,
        plan.measures(),
        query_ids,
        out / "per_query",
        "mamaretrieval",
        run=lambda name: _scored_run(store, name),
        qrels=StoredQrels(store).relevant(settings.lenient),
        relevant_at=settings.lenient,
    )
    return {
        "documents": len(chunk_ids),
        "queries": len(query_ids),
        "qrels": labels.count(),
        "dropped_judgments": labels.dropped,
        "runs": names,
    }


def _query_columns(store: Store) -> list[str]:
    """The generated queries' columns a BEIR query keeps."""
    return [c for c in store.columns(QUERIES) if c in ("query_id", "query_text", *MAMARETRIEVAL_METADATA)]


def _documents(store: Store, chunk_ids: list[str]) -> pl.DataFrame:
    """These chunks as BEIR documents, sorted by id."""
    return mamaretrieval_documents(
        store.read_table(CHUNKS, columns=["chunk_id", "text"], where={"chunk_id": chunk_ids})
    )


def _sorted_labels(store: Store, labels: StoredQrels, query_ids: set[str], size: int) -> Iterator[pl.DataFrame]:
    """The qrels sorted by query and document, a slice of judged queries at a time; an error names the first whose
    chunk is not in the corpus or whose query is not in ``query_ids``."""
    for part in id_slices(labels.query_ids(), size):
        qrels = labels.of_queries(part)
        docs = qrels["doc_id"].unique().to_list()
        known = store.read_table(CHUNKS, columns=["chunk_id"], where={"chunk_id": docs})["chunk_id"]
        yield mamaretrieval_labels(qrels, set(known.to_list()), query_ids)


def _retrievers(store: Store) -> list[str]:
    """The retrievers of the rankings table, sorted."""
    store.columns(RANKINGS)  # a missing table is named
    return sorted(StoredRankings(store, None).present())


def _scored_run(store: Store, name: str) -> pl.DataFrame:
    """One retriever's rankings as a run with its scores, in the table's order."""
    ranked = store.read_table(RANKINGS, columns=SCORED_RUN_COLUMNS, where={"retriever": [name]})
    return ranked.rename({"chunk_id": "doc_id"})


def _run_of(store: Store, name: str) -> RunOf:
    """One retriever's run rows of a slice of queries."""
    return lambda ids: rankings_to_run(
        store.read_table(RANKINGS, columns=RUN_COLUMNS, where={"retriever": [name], "query_id": ids})
    )
