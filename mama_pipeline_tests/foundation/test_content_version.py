"""Content data versions: a materialisation's data version is the digest of what its step wrote (the store tables
or partitions, the files and folders), so the same output under a new code version keeps the version, another output
changes it, and measured columns count for nothing."""

from __future__ import annotations

import dagster as dg
import polars as pl
import yaml

from mama_pipeline.common.file_ops import atomic_folder
from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline.store.duckdb_store import content_digest
from mama_pipeline_tests.support.llm_stages import with_embedded


def _digest(store: Store, table: str, partition: str | None = None) -> str:
    with store.connect() as con:
        return content_digest(con, table, partition)


def test_the_same_rows_in_any_order_have_one_digest_and_a_changed_value_another(tmp_path):
    store = Store(tmp_path / "a.duckdb")
    rows = pl.DataFrame({"id": ["q1", "q2", "q3"], "score": [0.5, 0.25, 1.0]})
    store.write_table("t", rows)
    first = _digest(store, "t")
    store.write_table("t", rows.reverse())
    assert _digest(store, "t") == first
    store.write_table("t", rows.with_columns(pl.Series("score", [0.5, 0.25, 0.75])))
    assert _digest(store, "t") != first
    store.write_table("t", rows.rename({"score": "value"}))  # the same values under another column name
    assert _digest(store, "t") != first


def test_a_partitions_digest_reads_that_partition_only(tmp_path):
    store = Store(tmp_path / "a.duckdb")
    store.write_table("p", pl.DataFrame({"x": [1, 2]}), partition="a")
    store.write_table("p", pl.DataFrame({"x": [1, 2]}), partition="b")
    assert _digest(store, "p", "a") == _digest(store, "p", "b")  # the partition column is no part of it
    before = _digest(store, "p", "a")
    store.write_table("p", pl.DataFrame({"x": [3]}), partition="b")
    assert _digest(store, "p", "a") == before
    assert _digest(store, "p", "b") != before


def test_measured_columns_are_left_out_of_the_digest(tmp_path):
    store = Store(tmp_path / "a.duckdb")
    with store.connect(write=True) as con:
        con.execute("CREATE TABLE llm_plan (asset VARCHAR, to_send BIGINT, latency_s DOUBLE, expected_s DOUBLE)")
        con.execute("INSERT INTO llm_plan VALUES ('judgments', 4, 0.5, 2.0)")
    first = _digest(store, "llm_plan")
    with store.connect(write=True) as con:
        con.execute("UPDATE llm_plan SET latency_s = 0.9, expected_s = 3.6")
    assert _digest(store, "llm_plan") == first
    with store.connect(write=True) as con:
        con.execute("UPDATE llm_plan SET to_send = 5")
    assert _digest(store, "llm_plan") != first


def _assets(version: str, rows: list[int], page: str, pages):
    @dg.asset(code_version=version)
    def table() -> pl.DataFrame:  # through the IO manager
        return pl.DataFrame({"x": rows})

    @dg.asset(code_version=version)
    def folder() -> dg.MaterializeResult:  # files only
        with atomic_folder(pages) as tmp:
            (tmp / "page.html").write_text(page)
        return dg.MaterializeResult()

    return [table, folder]


def _versions(tmp_path, home, version: str, rows: list[int], page: str) -> dict[str, str]:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(yaml.safe_dump({"data_dir": str(tmp_path / "data")})))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert dg.materialize(
            _assets(version, rows, page, tmp_path / "pages"), resources=shared_resources(str(cfg)), instance=instance
        ).success
        found = {}
        for name in ("table", "folder"):
            record = instance.get_latest_data_version_record(dg.AssetKey(name))
            found[name] = record.asset_materialization.tags["dagster/data_version"]
    return found


def test_a_rerun_with_the_same_output_keeps_its_data_version_and_another_output_changes_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    first = _versions(tmp_path, home, "v1", [1, 2], "<p>a</p>")
    assert _versions(tmp_path, home, "v2", [1, 2], "<p>a</p>") == first  # new code versions, the same output
    changed = _versions(tmp_path, home, "v3", [1, 3], "<p>b</p>")
    assert changed["table"] != first["table"] and changed["folder"] != first["folder"]
