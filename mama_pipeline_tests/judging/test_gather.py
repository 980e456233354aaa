"""``judgments`` and ``judging_failures`` gather the stored shards of ``judged_labels`` inside DuckDB: the tables,
what a downstream asset loads and the materialisation metadata, for a small ``judged_labels`` written by hand."""

import dagster as dg
import polars as pl
from polars.testing import assert_frame_equal

from mama_pipeline.judging import definitions as judging
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.judging import judging_defs
from mama_pipeline_tests.support.llm_stages import with_embedded

LABEL = {  # one label's columns besides the keys, status, reused and the varying ones below
    "judge_model": "m",
    "judge_identity": "ident",
    "prompt_hash": "ph",
    "d1_topic": True,
    "d2_meaningful": 1,
    "d3_actionable": 1,
    "d4_density": 1,
    "d3_answered": 1,
    "judge_endpoint": "ep",
    "corpus_version": "v1",
}
NO_LABEL = dict.fromkeys(LABEL) | {"structural_violation": None, "score": None, "reasoning": None, "cache_key": None}


def labelled(q, c, *, reused=False, violation=False, score=3, tier="t1"):
    return {
        "query_id": q,
        "chunk_id": c,
        "status": "labelled",
        "failure_reason": None,
        "reused": reused,
        **LABEL,
        "structural_violation": violation,
        "score": score,
        "reasoning": f"why {q} {c}",
        "cache_key": f"k-{q}-{c}",
        "tier": tier,
    }


def failed(q, c, reason, tier="t2"):
    return {
        "query_id": q,
        "chunk_id": c,
        "status": "failed",
        "failure_reason": reason,
        "reused": False,
        **NO_LABEL,
        "tier": tier,
    }


SHARDS = {  # rows in no particular order; q10 sorts before q2 (strings)
    "shard_000": [
        labelled("q2", "c1", score=5),
        failed("q1", "c3", "HTTP 500: server error"),
        labelled("q1", "c1", reused=True, score=0, tier=None),
        failed("q10", "c9", "timeout"),
    ],
    "shard_001": [
        labelled("q3", "c2", violation=True, score=6, tier="t2"),
        failed("q3", "c1", "HTTP 500: again"),
        labelled("q10", "c4", reused=True),
        failed("q2", "c7", "parse: not JSON"),
        labelled("q1", "c2", reused=True, violation=True, score=2),
    ],
    "shard_007": [  # left by an earlier configuration with more shards: not loaded, not gathered
        labelled("q0", "c0"),
        failed("q0", "c1", "stale: old shard"),
    ],
}

JUDGMENTS = pl.DataFrame(
    {
        "query_id": ["q1", "q1", "q10", "q2", "q3"],
        "chunk_id": ["c1", "c2", "c4", "c1", "c2"],
        "reused": [True, True, True, False, False],
        "judge_model": ["m"] * 5,
        "judge_identity": ["ident"] * 5,
        "prompt_hash": ["ph"] * 5,
        "d1_topic": [True] * 5,
        "d2_meaningful": [1] * 5,
        "d3_actionable": [1] * 5,
        "d4_density": [1] * 5,
        "d3_answered": [1] * 5,
        "structural_violation": [False, True, False, False, True],
        "score": [0, 2, 3, 5, 6],
        "reasoning": ["why q1 c1", "why q1 c2", "why q10 c4", "why q2 c1", "why q3 c2"],
        "judge_endpoint": ["ep"] * 5,
        "corpus_version": ["v1"] * 5,
        "cache_key": ["k-q1-c1", "k-q1-c2", "k-q10-c4", "k-q2-c1", "k-q3-c2"],
        "tier": [None, "t1", "t1", "t1", "t2"],
    },
    schema_overrides={c: pl.Int8 for c in ("d2_meaningful", "d3_actionable", "d4_density", "d3_answered", "score")},
)
FAILURES = pl.DataFrame(
    {
        "query_id": ["q1", "q10", "q2", "q3"],
        "chunk_id": ["c3", "c9", "c7", "c1"],
        "tier": ["t2"] * 4,
        "failure_reason": ["HTTP 500: server error", "timeout", "parse: not JSON", "HTTP 500: again"],
    }
)
BY_KIND = "| kind | len |\n|---|---|\n| HTTP 500 | 2 |\n| parse | 1 |\n| timeout | 1 |"

UPSTREAM = [judging_defs.queries, judging_defs.chunks, judging_defs.pooled_pairs, judging_defs.audit_pool]  # not run
seen: dict[str, pl.DataFrame] = {}


@dg.asset(ins={"judgments": dg.AssetIn("judgments"), "judging_failures": dg.AssetIn("judging_failures")})
def downstream(judgments: pl.DataFrame, judging_failures: pl.DataFrame) -> None:
    """Records what an asset downstream of the two loads through the IO manager."""
    seen.update(judgments=judgments, judging_failures=judging_failures)


def test_judgments_and_failures_are_the_loaded_shards_rows_in_key_order(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(f"data_dir: {tmp_path / 'data'}\njudging: {{shards: 2}}\n"))
    store = Store(tmp_path / "data" / "mama.duckdb")
    for shard, rows in SHARDS.items():
        store.write_table("judged_labels", pl.DataFrame(rows), partition=shard)
    store.write_table("judgments", JUDGMENTS.head(1).with_columns(query_id=pl.lit("old")))  # replaced, not added to

    area = judging.build_defs(load_settings(cfg))
    seen.clear()
    result = dg.materialize(
        [*area.assets, *UPSTREAM, downstream],
        selection=dg.AssetSelection.assets("judgments", "judging_failures", "downstream"),
        resources=shared_resources(str(cfg)),
    )
    assert result.success

    for name, expected in (("judgments", JUDGMENTS), ("judging_failures", FAILURES)):
        assert_frame_equal(store.read_table(name), expected)  # rows, their order, columns and dtypes
        assert_frame_equal(seen[name], expected)
    meta = {
        name: {k: v.value for k, v in result.asset_materializations_for_node(name)[0].metadata.items()}
        for name in ("judgments", "judging_failures")
    }
    assert meta["judgments"] == {
        "table": "judgments",
        "rows": 5,
        "labels": 5,
        "reused_labels": 3,
        "structural_violations": 2,
    }
    assert meta["judging_failures"] == {"table": "judging_failures", "rows": 4, "failures": 4, "by_kind": BY_KIND}


def test_no_failures_gives_an_empty_table_and_zero_counts(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(f"data_dir: {tmp_path / 'data'}\njudging: {{shards: 1}}\n"))
    store = Store(tmp_path / "data" / "mama.duckdb")
    store.write_table("judged_labels", pl.DataFrame([labelled("q1", "c1")]), partition="shard_000")

    area = judging.build_defs(load_settings(cfg))
    result = dg.materialize(
        [*area.assets, *UPSTREAM],
        selection=dg.AssetSelection.assets("judgments", "judging_failures"),
        resources=shared_resources(str(cfg)),
    )
    assert result.success
    assert_frame_equal(store.read_table("judging_failures"), FAILURES.clear())
    assert store.read_table("judgments")["chunk_id"].to_list() == ["c1"]
    failures = result.asset_materializations_for_node("judging_failures")[0].metadata
    assert (failures["failures"].value, failures["by_kind"].value) == (0, "(none)")
    judgments = result.asset_materializations_for_node("judgments")[0].metadata
    assert (judgments["reused_labels"].value, judgments["structural_violations"].value) == (0, 0)


def test_replace_from_query_keeps_the_query_order_and_the_tables_ddl(tmp_path):
    store = Store(tmp_path / "mama.duckdb")
    store.write_table("src", pl.DataFrame({"k": ["b", "a", "c"], "n": [2, 1, 3]}))
    # no DDL: the table is the query's result, in its order
    assert store.replace_from_query("picked", "SELECT n, k FROM src WHERE n > ? ORDER BY k DESC", [1]) == 2
    assert_frame_equal(store.read_table("picked"), pl.DataFrame({"n": [3, 2], "k": ["c", "b"]}))
    # a DDL: its columns, order and types, filled by name; an earlier table is replaced
    store.write_table("judging_failures", FAILURES)
    sql = "SELECT 'why: ' || k AS failure_reason, 'q' || n AS query_id, k AS chunk_id FROM src ORDER BY n"
    assert store.replace_from_query("judging_failures", sql) == 3
    expected = pl.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "chunk_id": ["a", "b", "c"],
            "tier": [None, None, None],
            "failure_reason": ["why: a", "why: b", "why: c"],
        },
        schema_overrides={"tier": pl.String},
    )
    assert_frame_equal(store.read_table("judging_failures"), expected)


def test_without_stored_shards_the_step_names_the_table_to_materialise(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(with_embedded(f"data_dir: {tmp_path / 'data'}\njudging: {{shards: 1}}\n"))
    Store(tmp_path / "data" / "mama.duckdb").write_table("unrelated", pl.DataFrame({"x": [1]}))
    result = dg.materialize(
        [*judging.build_defs(load_settings(cfg)).assets, *UPSTREAM],
        selection=dg.AssetSelection.assets("judgments"),
        resources=shared_resources(str(cfg)),
        raise_on_error=False,
    )
    assert not result.success
    cause = result.get_step_failure_events()[0].event_specific_data.error.cause
    assert cause.cls_name == "KeyError" and "table 'judged_labels' is not in" in cause.message
    assert "materialise its asset first" in cause.message
