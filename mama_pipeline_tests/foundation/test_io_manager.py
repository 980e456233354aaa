"""The DuckDB/polars IO manager: an input with ``columns`` metadata (the dagster-duckdb convention) loads only those
columns, in the table's row order; a column the table lacks is a one-line error naming both."""

from __future__ import annotations

import dagster as dg
import polars as pl
import yaml

from mama_pipeline.resources import shared_resources
from mama_pipeline.store import Store
from mama_pipeline_tests.support.llm_stages import with_embedded

ROWS = 300_000  # more than one DuckDB row group: a parallel scan could return them out of order
WIDE = pl.DataFrame({"a": [(i * 7919) % ROWS for i in range(ROWS)], "b": [f"x{i}" for i in range(ROWS)], "c": 0.5})


@dg.asset
def wide() -> pl.DataFrame:
    return WIDE


@dg.asset(ins={"wide": dg.AssetIn("wide", metadata={"columns": ["c", "a"]})})
def narrow(wide: pl.DataFrame) -> pl.DataFrame:
    return wide


@dg.asset(ins={"wide": dg.AssetIn("wide")})
def whole(wide: pl.DataFrame) -> pl.DataFrame:
    return wide


@dg.asset(ins={"wide": dg.AssetIn("wide", metadata={"columns": ["a", "nope"]})})
def misnamed(wide: pl.DataFrame) -> pl.DataFrame:
    return wide


def _config(tmp_path) -> str:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(yaml.safe_dump({"data_dir": str(tmp_path / "data")})))
    return str(cfg)


def test_columns_metadata_loads_those_columns_in_the_tables_row_order(tmp_path):
    assert dg.materialize([wide, narrow, whole], resources=shared_resources(_config(tmp_path))).success
    store = Store(tmp_path / "data" / "mama.duckdb")
    loaded = store.read_table("narrow")  # what the asset was given, stored as it was
    assert loaded.columns == ["c", "a"]
    assert loaded["a"].to_list() == WIDE["a"].to_list()  # not sorted: the table's order
    assert store.read_table("whole").columns == ["a", "b", "c"]  # no metadata: every column


def test_a_column_the_table_lacks_is_a_one_line_error_naming_table_and_column(tmp_path):
    result = dg.materialize([wide, misnamed], resources=shared_resources(_config(tmp_path)), raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    error = failure.event_specific_data.error
    message = (error.cause or error).message.strip()
    assert "\n" not in message, message
    assert "'nope'" in message and "table 'wide'" in message and "'a'" not in message, message


@dg.asset
def failures() -> pl.DataFrame:
    return pl.DataFrame({"x": [1]})


@dg.asset_check(asset=whole, additional_ins={"failures": dg.AssetIn("failures")})
def whole_agrees_with_failures(whole: pl.DataFrame, failures: pl.DataFrame) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def test_a_check_whose_input_was_never_materialised_names_the_asset_to_add(tmp_path):
    from mama_pipeline.demo._runner import failure_reason

    defs = dg.Definitions(
        assets=[wide, whole, failures],
        asset_checks=[whole_agrees_with_failures],
        resources=shared_resources(_config(tmp_path)),
    )
    job = defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey("wide"), dg.AssetKey("whole")])
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance, asset_selection=[dg.AssetKey("wide"), dg.AssetKey("whole")], raise_on_error=False
        )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    reason = failure_reason(failure.step_failure_data)
    assert reason.startswith("MissingInput: whole_whole_agrees_with_failures reads failures, which is not in the store")
    assert "add failures to the selection (--select '<the selection>,failures')" in reason
