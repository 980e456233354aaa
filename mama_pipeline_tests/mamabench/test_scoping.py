"""Scope verdicts through the real client and the fake server; the consensus join; the accounting."""

from __future__ import annotations

import json

import polars as pl
import pytest

from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.mamabench import _scope_prompt as scope_prompt
from mama_pipeline.mamabench._scope_prompt import ScopeVerdictWithReasoning
from mama_pipeline.mamabench._scoping import VERDICT_SCHEMA, classify, criteria_table, finalise, joined_verdicts
from mama_pipeline.mamabench._yields import refusals_by_reason, yield_table
from mama_pipeline_tests.mamabench.helpers import adapted


def answer(category: str) -> str:
    return "[[answer:" + json.dumps({"reasoning": "r", "category": category, "rationale": f"about {category}"}) + "]]"


@pytest.fixture
def rows() -> pl.DataFrame:
    """Four oss_eval items with scripted answers, their consensus twins, and the consensus row with no twin."""
    oss = adapted("healthbench_oss_eval").filter(pl.col("upstream_index").is_in([0, 7, 8, 11]))
    scripts = [answer("MATERNAL"), answer("NONE"), "[[fault:malformed]]", "[[fault:500]]"]
    oss = oss.with_columns(pl.Series("scope_input", [f"{s}\n{t}" for s, t in zip(scripts, oss["scope_input"])]))
    keys = oss["join_key"].to_list()
    cons = adapted("healthbench_consensus")
    cons = cons.filter(pl.col("join_key").is_in(keys) | pl.col("join_key").str.starts_with("mamabench-fixture"))
    return pl.concat([oss, cons])


def verdicts_for(client, rows: pl.DataFrame) -> tuple[pl.DataFrame, object]:
    v, report = classify(client, rows, ScopeVerdictWithReasoning)
    return pl.concat([v, joined_verdicts(rows, v)]), report


def test_verdicts_failures_consensus_join_and_accounting(make_client, rows) -> None:
    client = make_client(stage="classifier", max_retries=1, parse_retries=0)
    verdicts, report = verdicts_for(client, rows)
    oss_ids = rows.filter(pl.col("pool") == "healthbench_oss_eval")["item_id"].to_list()
    by_id = {r["item_id"]: r for r in verdicts.iter_rows(named=True)}
    assert [by_id[i]["status"] for i in oss_ids] == ["ok", "ok", "parse_failed", "transport_failed"]
    assert by_id[oss_ids[0]]["category"] == "MATERNAL" and by_id[oss_ids[0]]["rationale"] == "about MATERNAL"
    assert (
        by_id[oss_ids[0]]["reasoning"] == "r" and by_id[oss_ids[0]]["prompt_hash"] == scope_prompt.SCOPE_TEMPLATE.hash
    )
    assert by_id[oss_ids[2]]["category"] is None and by_id[oss_ids[2]]["error"]

    twin = {k: f"healthbench_consensus:{k.split(':', 1)[1]}" for k in oss_ids}
    assert by_id[twin[oss_ids[0]]]["status"] == "ok" and by_id[twin[oss_ids[0]]]["category"] == "MATERNAL"
    assert (
        by_id[twin[oss_ids[0]]]["source_item_id"] == oss_ids[0] and by_id[twin[oss_ids[0]]]["via"] == "oss_eval_verdict"
    )
    assert by_id[twin[oss_ids[2]]]["status"] == "oss_eval_verdict_failed"
    orphan = "healthbench_consensus:mamabench-fixture-consensus-no-oss-eval"
    assert by_id[orphan]["status"] == "no_oss_eval_verdict"

    items, accounting = finalise(rows, verdicts)
    fate = dict(zip(accounting["item_id"], zip(accounting["status"], accounting["reason"])))
    assert fate[oss_ids[0]] == ("kept", None) and fate[oss_ids[1]] == ("out_of_scope", None)
    assert fate[oss_ids[2]] == ("unclassified", "parse_failed")
    assert fate[oss_ids[3]] == ("unclassified", "transport_failed")
    assert fate[orphan] == ("unclassified", "no_oss_eval_verdict")
    assert accounting.height == rows.height  # nothing dropped
    assert sorted(items["item_id"]) == sorted([oss_ids[0], twin[oss_ids[0]]])
    kept = json.loads(items.filter(pl.col("item_id") == oss_ids[0])["item_json"][0])
    assert kept["source"]["metadata"]["category"] == "MATERNAL"
    criteria = criteria_table(rows, items)
    ids = {r["criterion_id"] for i in items["item_json"] for r in json.loads(i)["rubrics"]}
    assert set(criteria["criterion_id"]) == ids

    # nothing changed: answers come from the cache; only the transport failure is asked again
    again, report2 = verdicts_for(client, rows)
    assert report2.calls == 2  # the 500 fault: one try + one retry, never cached
    assert again.drop("from_cache", "error").equals(verdicts.drop("from_cache", "error"))


def test_editing_the_prompt_reclassifies(make_client, rows, monkeypatch) -> None:
    client = make_client(stage="classifier", max_retries=0, parse_retries=0)
    ok_rows = rows.filter(pl.col("pool") == "healthbench_oss_eval").head(2)
    _, first = verdicts_for(client, ok_rows)
    _, cached = verdicts_for(client, ok_rows)
    assert first.calls == 2 and cached.calls == 0
    edited = PromptTemplate("scope_classifier", scope_prompt.SYSTEM + "\nBe brief.", scope_prompt.USER)
    monkeypatch.setattr(scope_prompt, "SCOPE_TEMPLATE", edited)
    v, report = verdicts_for(client, ok_rows)
    assert report.calls == 2 and set(v["prompt_hash"]) == {edited.hash}


def test_pending_rows_without_a_verdict_are_an_error() -> None:
    rows = adapted("healthbench_hard")
    with pytest.raises(ValueError, match="pending rows have no scope verdict"):
        finalise(rows, pl.DataFrame(schema=VERDICT_SCHEMA))


def test_yield_and_refusal_tables_from_a_hand_made_accounting() -> None:
    acc = pl.DataFrame(
        {
            "pool": ["medqa_usmle"] * 4 + ["whb"] * 2,
            "status": ["kept", "out_of_scope", "refused", "unclassified", "kept", "kept"],
            "reason": [None, None, "empty_question", "parse_failed", None, None],
            "in_prescope": [None, None, None, None, True, True],
        }
    )
    y = {r["pool"]: r for r in yield_table(acc).iter_rows(named=True)}
    assert (y["medqa_usmle"]["upstream_rows"], y["medqa_usmle"]["kept"], y["medqa_usmle"]["yield_pct"]) == (4, 1, 25.0)
    assert y["whb"]["yield_pct"] == 100.0 and y["medmcqa"]["upstream_rows"] == 0 and y["medmcqa"]["yield_pct"] is None
    assert refusals_by_reason(acc).select("reason", "rows").rows() == [("empty_question", 1), ("parse_failed", 1)]
    with pytest.raises(ValueError, match="statuses outside"):
        yield_table(acc.with_columns(pl.lit("dropped").alias("status")))
