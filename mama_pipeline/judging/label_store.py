"""The append-only store of relevance labels, keyed on (query, chunk, judge model, prompt hash).

It is what makes judging incremental: only pairs without a row here for the
current judge model and prompt hash are sent to the judge. Rows are inserted in
one transaction per batch and never replaced, so a process killed mid-run keeps
every committed label and a re-run cannot duplicate one.
"""
from __future__ import annotations

import polars as pl

from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import ddl_path

LABEL_TABLE = "judgment_labels"

LABEL_SCHEMA = {
    "query_id": pl.String,
    "chunk_id": pl.String,
    "judge_model": pl.String,
    "prompt_hash": pl.String,
    "d1_topic": pl.Boolean,
    "d2_meaningful": pl.Int8,
    "d3_actionable": pl.Int8,
    "d4_density": pl.Int8,
    "d3_answered": pl.Int8,
    "structural_violation": pl.Boolean,
    "score": pl.Int8,
    "reasoning": pl.String,
    "judge_endpoint": pl.String,
    "corpus_version": pl.String,
    "cache_key": pl.String,
}


def insert_labels(store: Store, labels: pl.DataFrame) -> int:
    """Insert new labels in one transaction; rows already stored are left as they are. Returns rows added."""
    if labels.is_empty():
        return 0
    labels = labels.select([pl.col(c).cast(t) for c, t in LABEL_SCHEMA.items()])
    with store.connect(write=True) as con:
        con.execute(ddl_path(LABEL_TABLE).read_text())
        con.register("_labels", labels.to_arrow())
        before = con.execute(f"SELECT count(*) FROM {LABEL_TABLE}").fetchone()[0]
        con.execute(f"INSERT OR IGNORE INTO {LABEL_TABLE} BY NAME SELECT * FROM _labels")
        after = con.execute(f"SELECT count(*) FROM {LABEL_TABLE}").fetchone()[0]
        con.unregister("_labels")
    return after - before


def stored_labels(store: Store, judge_model: str, prompt_hash: str, pairs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Labels of one judge model and prompt hash, restricted to ``pairs`` (query_id, chunk_id) when given."""
    store.ensure_tables(LABEL_TABLE)
    sql = f"SELECT * FROM {LABEL_TABLE} l WHERE judge_model = ? AND prompt_hash = ?"
    with store.connect() as con:
        if pairs is not None:
            con.register("_pairs", pairs.select("query_id", "chunk_id").to_arrow())
            sql += " AND EXISTS (SELECT 1 FROM _pairs p WHERE p.query_id = l.query_id AND p.chunk_id = l.chunk_id)"
        df = con.execute(sql + " ORDER BY query_id, chunk_id", [judge_model, prompt_hash]).pl()
    return df.select([pl.col(c).cast(t) for c, t in LABEL_SCHEMA.items()])


def orphaned_labels(store: Store, judge_model: str, prompt_hash: str, chunk_ids: pl.Series) -> pl.DataFrame:
    """Labels of this judge and prompt whose chunk id is no longer in the corpus."""
    store.ensure_tables(LABEL_TABLE)
    with store.connect() as con:
        con.register("_chunks", pl.DataFrame({"chunk_id": chunk_ids.unique()}).to_arrow())
        df = con.execute(
            f"""SELECT query_id, chunk_id, corpus_version, score FROM {LABEL_TABLE} l
                WHERE judge_model = ? AND prompt_hash = ?
                  AND NOT EXISTS (SELECT 1 FROM _chunks c WHERE c.chunk_id = l.chunk_id)
                ORDER BY query_id, chunk_id""",
            [judge_model, prompt_hash],
        ).pl()
    return df.with_columns(pl.col("score").cast(pl.Int8))
