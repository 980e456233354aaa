"""The ``submissions`` table (one row per accepted submission) and the per-partition score tables.

A submission's row is written once, when it is accepted; a re-submission of the same file (same
``submission_id``) keeps the first row, date included. The score tables hold one block of rows per
submission, replaced together in one transaction when its partition is materialised.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import polars as pl

from mama_pipeline.common.content_version import record_written
from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import content_digest, table_ddl
from mama_pipeline.store.table_schema import table_schema

TABLE = "submissions"
PER_QUERY = "submission_per_query"
TRACKS = "submission_tracks"
PER_QUERY_SCHEMA = table_schema("submission_per_query")
TRACKS_SCHEMA = table_schema("submission_tracks")


@dataclass(frozen=True)
class Submission:
    submission_id: str
    kind: str
    name: str
    model: str | None
    link: str | None
    submitted_on: str
    files_json: str
    judge_model: str | None
    judge_prompt_sha256: str | None
    corpus_version: str | None

    @property
    def file_names(self) -> list[str]:
        return [f["name"] for f in json.loads(self.files_json)]


def find(store: Store, submission_id: str) -> Submission | None:
    """The stored row of ``submission_id``, or None."""
    if not store.table_exists(TABLE):
        return None
    rows = store.query(f"SELECT * FROM {TABLE} WHERE submission_id = ?", [submission_id]).to_dicts()
    return Submission(**rows[0]) if rows else None


def add(store: Store, submission: Submission) -> bool:
    """Insert the row unless the id is stored already (the first record is kept); True when inserted."""
    with store.connect(write=True) as con:
        con.execute(table_ddl(TABLE))
        before = con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0]
        con.execute(
            f"INSERT OR IGNORE INTO {TABLE} VALUES ({', '.join('?' * 10)})",
            [getattr(submission, k) for k in Submission.__dataclass_fields__],
        )
        return con.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0] > before


def write_scores(store: Store, submission_id: str, per_query: pl.DataFrame, tracks: pl.DataFrame) -> None:
    """Replace the submission's rows of both score tables in one transaction (their content recorded in the
    step's data version, ``content_version``)."""
    with store.connect(write=True) as con:
        for table, frame, schema in ((PER_QUERY, per_query, PER_QUERY_SCHEMA), (TRACKS, tracks, TRACKS_SCHEMA)):
            con.execute(table_ddl(table))
            con.execute(f"DELETE FROM {table} WHERE submission_id = ?", [submission_id])
            con.register("_incoming", frame.select([pl.col(c).cast(t) for c, t in schema.items()]).to_arrow())
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            con.unregister("_incoming")
            record_written(
                f"table:{table}[{submission_id}]",
                lambda table=table: content_digest(con, table, where={"submission_id": submission_id}),
            )
