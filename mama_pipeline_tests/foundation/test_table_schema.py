"""The polars schema derived from a table's DDL (``store/table_schema.py``): what the store reads back, and the
dtypes each DuckDB type stands for, written out by hand for tables with lists, structs, timestamps and booleans."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.common.sql_contracts import contract_files
from mama_pipeline.store.table_schema import table_schema


@pytest.mark.parametrize("table", sorted(contract_files()))
def test_an_empty_frame_of_the_derived_schema_reads_back_with_the_same_dtypes(store, table):
    schema = table_schema(table)
    store.write_table(table, pl.DataFrame(schema=schema))
    assert store.read_table(table).schema == pl.Schema(schema)


def test_a_row_of_the_derived_schema_round_trips_through_the_store(store):
    schema = table_schema("calibration_meta_eval")
    row = {
        "upstream_line": 1,
        "prompt": [{"role": "user", "content": "hi"}],
        "completion": "c",
        "rubric": "r",
        "category": "cluster:x",
        "binary_labels": [True, False],
        "anonymized_physician_ids": ["p1", "p2"],
        "prompt_id": "p",
        "completion_id": "q",
        "canary": None,
    }
    store.write_table("calibration_meta_eval", pl.DataFrame([row], schema=schema))
    assert store.read_table("calibration_meta_eval").rows(named=True) == [row]


def test_lists_and_structs_of_the_meta_eval_table():
    assert table_schema("calibration_meta_eval") == {
        "upstream_line": pl.Int64,
        "prompt": pl.List(pl.Struct({"role": pl.String, "content": pl.String})),
        "completion": pl.String,
        "rubric": pl.String,
        "category": pl.String,
        "binary_labels": pl.List(pl.Boolean),
        "anonymized_physician_ids": pl.List(pl.String),
        "prompt_id": pl.String,
        "completion_id": pl.String,
        "canary": pl.String,
    }


def test_a_timestamp_and_32_bit_integers():
    assert table_schema("llm_failures") == {
        "cache_key": pl.String,
        "stage": pl.String,
        "item_id": pl.String,
        "error": pl.String,
        "attempts": pl.Int32,
        "created_at": pl.Datetime("us"),
    }


def test_float_and_integer_lists_of_the_embedding_cache():
    assert table_schema("embedding_cache") == {
        "model_key": pl.String,
        "text_sha256": pl.String,
        "n_tokens": pl.Int32,
        "indices": pl.List(pl.Int32),
        "vector": pl.List(pl.Float32),
    }


def test_doubles_bigints_and_the_column_order_of_significance():
    schema = table_schema("significance")
    assert list(schema) == [
        "measure", "retriever_a", "retriever_b", "n_queries", "mean_a", "mean_b", "diff", "ci_low", "ci_high",
        "p_randomization", "p_randomization_holm", "only_a", "only_b", "p_mcnemar", "p_mcnemar_holm", "refused",
    ]  # fmt: skip
    assert (schema["n_queries"], schema["diff"], schema["only_a"], schema["refused"]) == (
        pl.Int64,
        pl.Float64,
        pl.Int64,
        pl.String,
    )


def test_tinyints_and_booleans_of_a_partitioned_table_without_its_partition_column():
    schema = table_schema("judged_labels")
    assert "_partition" not in schema
    assert {c: schema[c] for c in ("reused", "d1_topic", "d2_meaningful", "score", "structural_violation")} == {
        "reused": pl.Boolean,
        "d1_topic": pl.Boolean,
        "d2_meaningful": pl.Int8,
        "score": pl.Int8,
        "structural_violation": pl.Boolean,
    }


def test_a_table_without_ddl_is_named():
    with pytest.raises(KeyError, match="'no_such_table' has no DDL"):
        table_schema("no_such_table")


def test_each_call_returns_its_own_dict():
    table_schema("significance")["measure"] = pl.Int64
    assert table_schema("significance")["measure"] == pl.String


def test_a_frame_without_the_columns_added_on_write():
    assert table_schema("rerank_cache", without=("model_key",)) == {
        "query_sha256": pl.String,
        "text_sha256": pl.String,
        "score": pl.Float64,
        "n_tokens": pl.Int32,
    }
    with pytest.raises(KeyError, match=r"'rerank_cache' has no column\(s\) \['benchmark'\]"):
        table_schema("rerank_cache", without=("benchmark",))
