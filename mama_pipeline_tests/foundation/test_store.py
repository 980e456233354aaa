"""The locked DuckDB store: atomic table and partition replacement, DDL enforcement."""

from __future__ import annotations

import multiprocessing as mp
from datetime import datetime

import polars as pl
import pytest

from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import DuplicateKeyError, declared_key


def test_partition_replace_is_atomic_and_isolated(store):
    store.write_table("t", pl.DataFrame({"a": [1, 2]}), partition="p1")
    store.write_table("t", pl.DataFrame({"a": [3]}), partition="p2")
    store.write_table("t", pl.DataFrame({"a": [9]}), partition="p1")
    assert sorted(store.read_table("t")["a"].to_list()) == [3, 9]
    assert store.read_table("t", partitions=["p2"])["a"].to_list() == [3]


def test_read_some_columns_of_the_rows_holding_given_values_in_table_order(store):
    store.write_table("t", pl.DataFrame({"a": [3, 1, 2, 1], "b": ["x", "y", "z", "w"], "c": [0.5] * 4}), partition="p")
    some = store.read_table("t", columns=["b", "a"], where={"a": [1, 3]})
    assert some.columns == ["b", "a"] and some.rows() == [("x", 3), ("y", 1), ("w", 1)]
    assert store.read_table("t", partitions=["p"], where={"b": ["z"], "a": [2]})["c"].to_list() == [0.5]
    assert store.read_table("t", partitions=["q"], where={"a": [1]}).height == 0
    assert store.read_table("t", where={"a": []}).height == 0


def test_failed_write_leaves_previous_table_intact(store):
    def row(key, stage):
        return pl.DataFrame(
            {
                "cache_key": [key],
                "stage": [stage],
                "item_id": ["i"],
                "error": ["e"],
                "attempts": [1],
                "created_at": [datetime(2026, 1, 1)],
            }
        )

    store.write_table("llm_failures", row("k", "judge"))
    with pytest.raises(Exception, match="NOT NULL"):
        store.write_table("llm_failures", row("k2", None))  # the DDL says stage NOT NULL
    assert store.read_table("llm_failures")["cache_key"].to_list() == ["k"]


def test_slices_stream_in_order_into_one_atomic_write(store):
    def slices(rows: list[list[int]]):
        yield from (pl.DataFrame({"a": r, "b": [str(x) for x in r]}) for r in rows)

    assert store.write_table("t", slices([[3, 1], [], [2]])) == 3
    assert store.read_table("t").rows() == [(3, "3"), (1, "1"), (2, "2")]  # insertion order, no sort
    assert store.write_table("u", slices([[5]]), partition="p1") == 1
    assert store.write_table("u", slices([[7], [6]]), partition="p2") == 2
    assert store.read_table("u", partitions=["p2"]).rows() == [(7, "7"), (6, "6")]

    def failing():
        yield pl.DataFrame({"a": [8], "b": ["8"]})
        raise RuntimeError("slice failed")

    with pytest.raises(Exception, match="slice failed"):
        store.write_table("u", failing(), partition="p2")
    assert store.read_table("u").rows() == [(5, "5"), (7, "7"), (6, "6")]  # the failed write left nothing
    with pytest.raises(ValueError, match="no slices"):
        store.write_table("t", iter([]))


def test_sliced_rows_meet_the_ddl_like_one_frame(store):
    row = {"cache_key": "k", "stage": "judge", "item_id": "i", "error": "e", "attempts": 1}
    frame = pl.DataFrame([row | {"created_at": datetime(2026, 1, 1)}])
    store.write_table("llm_failures", iter([frame, frame.with_columns(cache_key=pl.lit("k2"))]))
    assert store.read_table("llm_failures")["cache_key"].to_list() == ["k", "k2"]
    with pytest.raises(Exception, match="NOT NULL"):
        store.write_table("llm_failures", iter([frame, frame.with_columns(stage=pl.lit(None, pl.String))]))
    assert store.read_table("llm_failures")["cache_key"].to_list() == ["k", "k2"]


def _labels(*keys: tuple[str, str]) -> pl.DataFrame:
    """variant_labels rows (sql/tables/robustness/variant_labels.sql) of the given (variant_id, chunk_id) keys."""
    return pl.DataFrame(
        [
            {
                "variant_id": v,
                "parent_id": v.split("~")[0],
                "kind": v.split("~")[1],
                "chunk_id": c,
                "d1_topic": True,
                "d2_meaningful": 1,
                "d3_actionable": 2,
                "d4_density": 1,
                "score": 2,
                "origin": "inherited",
                "judge_model": "m",
                "prompt_hash": "h",
            }
            for v, c in keys
        ]
    )


def test_variant_labels_declare_their_key_and_a_primary_key_is_no_declared_key():
    assert declared_key("variant_labels") == ["variant_id", "chunk_id"]
    assert declared_key("judgments") == []  # its key is a PRIMARY KEY, enforced by DuckDB
    assert declared_key("no_such_table") == []


def test_a_keyed_write_stores_rows_sharing_a_column_but_not_the_key(store):
    keys = [("q1~noise", "c2"), ("q1~noise", "c1"), ("q1~shorthand", "c1"), ("q2~noise", "c1")]
    assert store.write_table("variant_labels", iter([_labels(*keys[:3]), _labels(keys[3])])) == 4
    assert store.read_table("variant_labels").select("variant_id", "chunk_id").rows() == keys  # in written order


def test_a_duplicate_key_fails_the_write_in_one_line_and_leaves_the_table_as_it_was(store):
    before = [("q1~noise", "c1"), ("q1~noise", "c2")]
    store.write_table("variant_labels", _labels(*before))
    message = (
        "table 'variant_labels': more than one row with key (variant_id, chunk_id), "
        "e.g. variant_id = 'q2~noise', chunk_id = 'c7'; nothing written"
    )
    with pytest.raises(DuplicateKeyError) as across_slices:
        store.write_table(
            "variant_labels", iter([_labels(("q2~noise", "c7"), ("q2~noise", "c8")), _labels(("q2~noise", "c7"))])
        )
    assert str(across_slices.value) == message
    with pytest.raises(DuplicateKeyError) as in_one_frame:
        store.write_table("variant_labels", _labels(("q2~noise", "c7"), ("q3~noise", "c1"), ("q2~noise", "c7")))
    assert str(in_one_frame.value) == message
    assert store.read_table("variant_labels").select("variant_id", "chunk_id").rows() == before  # rolled back

    store.write_table("src", _labels(("q2~noise", "c7"), ("q2~noise", "c7")))  # no DDL: no key
    with pytest.raises(DuplicateKeyError) as from_query:
        store.replace_from_query("variant_labels", "SELECT * FROM src")
    assert str(from_query.value) == message
    assert store.read_table("variant_labels").select("variant_id", "chunk_id").rows() == before


def test_a_keyed_write_runs_bounded_and_its_settings_are_reset_after(store):
    seen = []

    def slices():
        yield _labels(("q1~noise", "c1"))
        seen.append(store.query("SELECT current_setting('memory_limit') AS m")["m"].item())  # through the write
        yield _labels(("q1~noise", "c2"))

    store.write_table("variant_labels", slices())
    assert seen == ["488.2 MiB"]  # BOUNDED's 512 MB, as DuckDB shows it
    assert store.query("SELECT current_setting('memory_limit') AS m")["m"].item() != "488.2 MiB"


def _writer(path: str, n: int) -> None:
    s = Store(path)
    for i in range(20):
        s.write_table(f"w{n}", pl.DataFrame({"i": [i]}), partition=str(i))


def test_writers_in_several_processes_interleave(tmp_path):
    path = str(tmp_path / "db.duckdb")
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, n)) for n in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    s = Store(path)
    for n in range(3):
        assert s.read_table(f"w{n}").height == 20


def test_a_partitioned_table_from_an_older_ddl_gains_the_new_columns(store):
    with store.connect(write=True) as con:  # judged_labels as created before judge identities were recorded
        con.execute(
            "CREATE TABLE judged_labels (query_id VARCHAR NOT NULL, chunk_id VARCHAR NOT NULL, "
            "status VARCHAR NOT NULL, reused BOOLEAN NOT NULL, judge_model VARCHAR, _partition VARCHAR NOT NULL)"
        )
        con.execute("INSERT INTO judged_labels VALUES ('q1', 'c1', 'labelled', false, 'm', 'shard_000')")
    new = pl.DataFrame(
        {
            "query_id": ["q2"],
            "chunk_id": ["c2"],
            "status": ["labelled"],
            "reused": [False],
            "judge_model": ["m"],
            "judge_identity": ["abc"],
        }
    )
    store.write_table("judged_labels", new, partition="shard_001")
    rows = store.query("select query_id, judge_identity, _partition from judged_labels order by 1").rows()
    assert rows == [("q1", None, "shard_000"), ("q2", "abc", "shard_001")]


def test_a_table_that_became_partitioned_drops_its_unpartitioned_rows_at_the_first_partition_write(store):
    with store.connect(write=True) as con:  # variant_rankings as created before it was partitioned per retriever
        con.execute(
            "CREATE TABLE variant_rankings (query_id VARCHAR NOT NULL, retriever VARCHAR NOT NULL, rank INTEGER NOT "
            "NULL, chunk_id VARCHAR NOT NULL, score DOUBLE NOT NULL, PRIMARY KEY (retriever, query_id, rank))"
        )
        con.execute(
            "INSERT INTO variant_rankings VALUES ('q1~typo', 'bm25', 1, 'c1', 2.0), ('q1~typo', 'x', 1, 'c2', 1.0)"
        )
    again = pl.DataFrame(
        {"query_id": ["q1~typo"], "retriever": ["bm25"], "rank": [1], "chunk_id": ["c3"], "score": [3.0]}
    )
    store.write_table("variant_rankings", again, partition="bm25")  # the same key: no duplicate with the old row
    rows = store.query("select retriever, chunk_id, _partition from variant_rankings order by 1").rows()
    assert rows == [("bm25", "c3", "bm25")]


def test_held_open_serves_every_connection_from_one_open_database(tmp_path, monkeypatch):
    import duckdb

    from mama_pipeline.store import duckdb_store

    store = Store(tmp_path / "held.duckdb")
    opened = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb_store.duckdb, "connect", lambda *a, **k: opened.append(a) or real(*a, **k))
    with duckdb_store.hold_open(store.path):
        store.write_table("t", pl.DataFrame({"x": [1, 2]}), partition="p")
        store.write_table("t", pl.DataFrame({"x": [3]}), partition="p")  # partition rewrite: a transaction
        assert store.read_table("t")["x"].to_list() == [3]
        with pytest.raises(RuntimeError):  # a failed write rolls back on the held database too
            with store.connect(write=True) as con:
                con.execute("DELETE FROM t")
                raise RuntimeError("boom")
        assert store.read_table("t")["x"].to_list() == [3]
        with duckdb_store.hold_open(store.path):  # nested: the same database
            assert store.table_exists("t")
    assert len(opened) == 1  # the file was opened once for all of the above
    assert Store(store.path).read_table("t")["x"].to_list() == [3]  # closed: other openers see the data
    assert len(opened) == 2


@pytest.mark.parametrize("held", [False, True])
def test_slices_of_a_write_read_the_committed_store_and_a_read_of_another_thread_waits(tmp_path, held):
    import threading
    from contextlib import nullcontext

    from mama_pipeline.store import duckdb_store

    store = Store(tmp_path / "mama.duckdb")
    slices, rows = 40, 20_000  # each slice its own insert statement of the one write
    store.write_table("src", pl.DataFrame({"k": [i // rows for i in range(slices * rows)], "v": range(slices * rows)}))
    store.write_table("dst", pl.DataFrame({"k": [-1], "v": [-1]}))
    elsewhere: dict[str, object] = {}

    def read_elsewhere() -> None:
        elsewhere["rows"] = store.read_table("src", where={"k": [0]}).height

    def computed():
        for k in range(slices):
            part = store.read_table("src", where={"k": [k]}).with_columns(pl.col("v") * 2)
            old = store.read_table("dst")  # the committed table, not the write's
            yield part.with_columns(pl.col("v") + old.height - 1)
            if k == 1:  # inside the write: a read of another thread waits for its lock
                other = threading.Thread(target=read_elsewhere, daemon=True)
                other.start()
                other.join(0.5)
                elsewhere["waited"] = other.is_alive()
                elsewhere["thread"] = other

    outcome: dict[str, object] = {}

    def write() -> None:
        with duckdb_store.hold_open(store.path) if held else nullcontext():
            try:
                outcome["rows"] = store.write_table("dst", computed())
            except BaseException as e:
                outcome["error"] = e
            if "thread" in elsewhere:  # done before hold_open closes the database it reads
                elsewhere["thread"].join(60)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(120)
    assert not writer.is_alive(), "the sliced write hangs (its reads wait for the write's own lock?)"
    assert "error" not in outcome, outcome.get("error")
    assert outcome["rows"] == slices * rows
    assert store.read_table("dst")["v"].to_list() == [2 * v for v in range(slices * rows)]
    assert elsewhere["waited"] is True
    assert elsewhere["rows"] == rows
    assert not duckdb_store._writing  # the registry is cleaned up


@pytest.mark.parametrize("held", [False, True])
def test_settings_hold_for_one_unit_of_work_and_are_reset(tmp_path, held):
    from contextlib import nullcontext

    from mama_pipeline.store import BOUNDED, duckdb_store

    store = Store(tmp_path / "s.duckdb")
    store.write_table("t", pl.DataFrame({"x": [1]}))
    limit = "SELECT current_setting('memory_limit'), current_setting('threads')"
    with duckdb_store.hold_open(store.path) if held else nullcontext():
        with store.connect() as con:
            default = con.execute(limit).fetchone()
        with store.connect(settings={**BOUNDED, "threads": 1}) as con:
            bounded = con.execute(limit).fetchone()
        with store.connect() as con:
            after = con.execute(limit).fetchone()
    assert bounded == ("488.2 MiB", 1)  # 512 MB as DuckDB shows it
    assert after == default and default != bounded


@pytest.mark.parametrize("table", ["llm_responses", "judgment_labels"])
def test_the_tables_written_a_batch_at_a_time_have_no_primary_key_index(table):
    import duckdb

    from mama_pipeline.store.duckdb_store import table_ddl

    with duckdb.connect() as con:
        con.execute(table_ddl(table))
        kinds = {r[0] for r in con.execute("SELECT constraint_type FROM duckdb_constraints()").fetchall()}
    assert "PRIMARY KEY" not in kinds and "NOT NULL" in kinds


KEYED_CACHE_DDL = (  # llm_responses as its DDL had it before 6 December 2026: cache_key PRIMARY KEY
    "CREATE TABLE llm_responses (cache_key VARCHAR PRIMARY KEY, stage VARCHAR NOT NULL, endpoint VARCHAR "
    "NOT NULL, model VARCHAR NOT NULL, template_id VARCHAR NOT NULL, template_hash VARCHAR NOT NULL, "
    "schema_hash VARCHAR NOT NULL, status VARCHAR NOT NULL, raw_text VARCHAR, reasoning VARCHAR, "
    "parsed_json VARCHAR, error VARCHAR, prompt_tokens BIGINT, completion_tokens BIGINT, cached_tokens "
    "BIGINT, attempts INTEGER NOT NULL, latency_s DOUBLE, created_at TIMESTAMP NOT NULL)"
)


def test_a_table_an_older_ddl_keyed_is_rebuilt_once_without_the_key_rows_and_types_kept(store, caplog):
    from mama_pipeline.store.duckdb_store import drop_primary_key

    with store.connect(write=True) as con:  # llm_responses as its DDL had it before: cache_key PRIMARY KEY
        con.execute(KEYED_CACHE_DDL)
        con.execute(
            "INSERT INTO llm_responses VALUES ('k1', 'judge', 'e', 'm', 't', 'h', 's', 'ok', 'raw', NULL, '{}', "
            "NULL, 7, 3, 0, 1, 0.25, TIMESTAMP '2026-01-02 03:04:05.000006'), ('k2', 'judge', 'e', 'm', 't', 'h', "
            "'s', 'parse_failed', 'x', NULL, NULL, 'bad', NULL, NULL, NULL, 2, NULL, TIMESTAMP '2026-01-03 00:00:00')"
        )
    before = store.read_table("llm_responses")
    with caplog.at_level("WARNING", logger="mama_pipeline.store"), store.connect(write=True) as con:
        assert drop_primary_key(con, "llm_responses") == 2
        assert drop_primary_key(con, "llm_responses") is None  # once
    assert caplog.messages == [
        "llm_responses: rebuilt without its PRIMARY KEY index (2 rows kept), once: its writes keep the key themselves"
    ]
    after = store.read_table("llm_responses")
    assert after.equals(before) and after.schema == before.schema
    with store.connect() as con:
        kinds = con.execute(
            "SELECT constraint_type FROM duckdb_constraints() WHERE table_name = 'llm_responses'"
        ).fetchall()
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert ("PRIMARY KEY",) not in kinds and tables == {"llm_responses"}
