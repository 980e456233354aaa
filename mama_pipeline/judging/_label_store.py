"""The append-only store of relevance labels, keyed on (query, chunk, judge identity, prompt hash).

The judge identity (:func:`mama_pipeline.llm.client.stage_identity`) covers what the
LLM cache key covers besides the prompt: endpoint identity, model and decoding
parameters. Two stages that differ in any of these (a reference judge on another
server, or with another seed) never share labels.

It is what makes judging incremental: only pairs without a row here for the
current judge identity and prompt hash are sent to the judge. Rows are inserted in
one transaction per batch and never replaced, so a process killed mid-run keeps
every committed label and a re-run cannot duplicate one.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import polars as pl

from mama_pipeline.store import BOUNDED, Store
from mama_pipeline.store.duckdb_store import drop_primary_key, table_ddl
from mama_pipeline.store.table_schema import table_schema

LABEL_TABLE = "judgment_labels"
UNRECORDED_IDENTITY = "unrecorded"  # labels stored before identities were recorded: kept, never reused

LABEL_SCHEMA = table_schema("judgment_labels")
LABEL_KEY = ["query_id", "chunk_id", "judge_identity", "prompt_hash"]  # unique: insert_labels adds only new keys


def _ensure_table(con: duckdb.DuckDBPyConnection) -> None:
    """Create the table; a table from before judge identities were recorded is rebuilt with them unrecorded, one
    with a PRIMARY KEY without it."""
    columns = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [LABEL_TABLE]
        ).fetchall()
    }
    if columns and "judge_identity" not in columns:
        con.execute(f"ALTER TABLE {LABEL_TABLE} RENAME TO {LABEL_TABLE}_unidentified")
        con.execute(table_ddl(LABEL_TABLE))
        con.execute(
            f"INSERT INTO {LABEL_TABLE} BY NAME SELECT *, '{UNRECORDED_IDENTITY}' AS judge_identity "
            f"FROM {LABEL_TABLE}_unidentified"
        )
        con.execute(f"DROP TABLE {LABEL_TABLE}_unidentified")
    con.execute(table_ddl(LABEL_TABLE))
    drop_primary_key(con, LABEL_TABLE)


def ensure_label_table(store: Store) -> None:
    with store.connect(write=True) as con:
        _ensure_table(con)


def insert_labels(store: Store, labels: pl.DataFrame) -> int:
    """Insert new labels in one transaction; rows already stored are left as they are. Returns rows added."""
    if labels.is_empty():
        return 0
    labels = labels.select([pl.col(c).cast(t) for c, t in LABEL_SCHEMA.items()]).unique(
        LABEL_KEY, keep="first", maintain_order=True
    )
    with store.connect(write=True) as con:
        _ensure_table(con)
        con.register("_labels", labels.to_arrow())
        added = con.execute(
            f"INSERT INTO {LABEL_TABLE} BY NAME SELECT l.* FROM _labels l "
            f"ANTI JOIN {LABEL_TABLE} USING ({', '.join(LABEL_KEY)})"
        ).fetchone()[0]
        con.unregister("_labels")
    return added


def _version_filter(judge_identity: str | None) -> tuple[str, list[str]]:
    if judge_identity is None:
        return "judge_model = ? AND prompt_hash = ?", []
    return "judge_model = ? AND prompt_hash = ? AND judge_identity = ?", [judge_identity]


def stored_labels(
    store: Store,
    judge_model: str,
    prompt_hash: str,
    pairs: pl.DataFrame | None = None,
    judge_identity: str | None = None,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame:
    """Labels of one judge and prompt hash, restricted to ``pairs`` (query_id, chunk_id) when given; ``columns``:
    those of LABEL_SCHEMA only (e.g. the pairs labelled, without the labels).

    Pass ``judge_identity`` (``LLMClient.identity``) to get one judge's labels; without it
    every judge of that model name is returned, so a pair can appear once per identity.
    """
    ensure_label_table(store)
    where, extra = _version_filter(judge_identity)
    columns = list(LABEL_SCHEMA) if columns is None else list(columns)
    sql = f"SELECT {', '.join(columns)} FROM {LABEL_TABLE} l WHERE {where}"
    with store.connect(settings=BOUNDED) as con:  # the scan of every label must not fill DuckDB's buffers
        if pairs is not None:
            con.register("_pairs", pairs.select("query_id", "chunk_id").to_arrow())
            sql += " AND EXISTS (SELECT 1 FROM _pairs p WHERE p.query_id = l.query_id AND p.chunk_id = l.chunk_id)"
        df = con.execute(sql + " ORDER BY query_id, chunk_id, judge_identity", [judge_model, prompt_hash, *extra]).pl()
    return df.select([pl.col(c).cast(LABEL_SCHEMA[c]) for c in columns])


def orphaned_labels(
    store: Store,
    judge_model: str,
    prompt_hash: str,
    chunk_ids: pl.Series,
    judge_identity: str | None = None,
) -> pl.DataFrame:
    """Labels of this judge and prompt whose chunk id is no longer in the corpus."""
    ensure_label_table(store)
    where, extra = _version_filter(judge_identity)
    with store.connect() as con:
        con.register("_chunks", pl.DataFrame({"chunk_id": chunk_ids.unique()}).to_arrow())
        df = con.execute(
            f"""SELECT query_id, chunk_id, corpus_version, score FROM {LABEL_TABLE} l
                WHERE {where}
                  AND NOT EXISTS (SELECT 1 FROM _chunks c WHERE c.chunk_id = l.chunk_id)
                ORDER BY query_id, chunk_id""",
            [judge_model, prompt_hash, *extra],
        ).pl()
    return df.with_columns(pl.col("score").cast(pl.Int8))
