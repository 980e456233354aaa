"""Scope verdicts: the classifier run, the consensus join, and the final accounting.

Every pending row gets one verdict row. A failed call is a verdict with status
``parse_failed`` or ``transport_failed`` and no category; such rows end up
``unclassified``, listed with their error, never given a default label.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

import polars as pl
from pydantic import BaseModel

from mama_pipeline.llm.client import LLMRequest, RunReport
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.mamabench import _scope_prompt as scope_prompt
from mama_pipeline.mamabench._pools import POOL_BY_NAME
from mama_pipeline.mamabench._schema import CanonicalItem, Category
from mama_pipeline.store.table_schema import table_schema

VERDICT_SCHEMA = table_schema("mamabench_scope_verdicts")

ITEM_SCHEMA = table_schema("mamabench_items")

ACCOUNTING_SCHEMA = table_schema("mamabench_accounting")


class StageClient(Protocol):
    identity: str

    def run(
        self, template: PromptTemplate, output_model: type[BaseModel], requests: Sequence[LLMRequest]
    ) -> RunReport: ...


def scope_requests(rows: pl.DataFrame) -> list[LLMRequest]:
    """Classifier requests for the rows that carry a scope input, in item-id order."""
    todo = rows.filter(pl.col("scope_mode").is_not_null()).sort("item_id")
    return [
        LLMRequest(r["item_id"], scope_prompt.render_messages(r["scope_mode"], r["scope_input"]))
        for r in todo.select("item_id", "scope_mode", "scope_input").iter_rows(named=True)
    ]


def pending_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """The rows the classifier is asked about: pending, with a scope input."""
    return rows.filter(pl.col("status") == "pending", pl.col("scope_mode").is_not_null())


def classify(client: StageClient, rows: pl.DataFrame, output_model: type[BaseModel]) -> tuple[pl.DataFrame, RunReport]:
    """One verdict per row with a scope input, through the shared client."""
    pending = pending_rows(rows)
    requests = scope_requests(pending)
    report = client.run(scope_prompt.SCOPE_TEMPLATE, output_model, requests)
    pool_of = dict(pending.select("item_id", "pool").iter_rows())
    out = []
    for r in report.results:
        value = r.value or {}
        out.append(
            (
                r.item_id,
                pool_of[r.item_id],
                "classifier",
                r.status,
                value.get("category"),
                value.get("rationale"),
                r.reasoning,
                r.error,
                r.from_cache,
                report.model,
                report.endpoint,
                report.template_id,
                report.template_hash,
                None,
                client.identity,
            )
        )
    return pl.DataFrame(out, schema=VERDICT_SCHEMA, orient="row"), report


def joined_verdicts(adapted: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """Verdicts for pools scoped by oss_eval's verdict on the same ``prompt_id``."""
    joined_pools = [name for name, p in POOL_BY_NAME.items() if p.scoping == "oss_eval_verdict"]
    targets = adapted.filter(pl.col("status") == "pending", pl.col("pool").is_in(joined_pools))
    oss = (
        adapted.filter(pl.col("pool") == "healthbench_oss_eval", pl.col("join_key").is_not_null())
        .select("join_key", pl.col("item_id").alias("source_item_id"))
        .join(verdicts.drop("pool", "via", "source_item_id"), left_on="source_item_id", right_on="item_id", how="inner")
        .unique("join_key", keep="first", maintain_order=True)
    )
    out = targets.select("item_id", "pool", "join_key").join(oss, on="join_key", how="left")
    status = (
        pl.when(pl.col("status").is_null())
        .then(pl.lit("no_oss_eval_verdict"))
        .when(pl.col("status") != "ok")
        .then(pl.lit("oss_eval_verdict_failed"))
        .otherwise(pl.lit("ok"))
    )
    return (
        out.with_columns(status.alias("status"), pl.lit("oss_eval_verdict").alias("via"))
        .select([pl.col(c).cast(t) for c, t in VERDICT_SCHEMA.items()])
        .sort("item_id")
    )


def finalise(adapted: pl.DataFrame, verdicts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(kept items, accounting of every upstream row) from adapted rows and verdicts."""
    v = verdicts.select("item_id", pl.col("status").alias("v_status"), pl.col("category").alias("v_category"))
    df = adapted.join(v, on="item_id", how="left")
    waiting = df.filter(pl.col("status") == "pending", pl.col("v_status").is_null())
    if waiting.height:
        raise ValueError(f"{waiting.height} pending rows have no scope verdict, e.g. {waiting['item_id'][0]}")
    pending = pl.col("status") == "pending"
    status = (
        pl.when(~pending)
        .then(pl.col("status"))
        .when(pl.col("v_status") != "ok")
        .then(pl.lit("unclassified"))
        .when(pl.col("v_category") == Category.NONE.value)
        .then(pl.lit("out_of_scope"))
        .otherwise(pl.lit("kept"))
    )
    reason = pl.when(pending & (pl.col("v_status") != "ok")).then(pl.col("v_status")).otherwise(pl.col("reason"))
    category = pl.when(pending).then(pl.col("v_category"))
    df = df.with_columns(status.alias("status"), reason.alias("reason"), category.alias("category"))
    accounting = df.select([pl.col(c).cast(t) for c, t in ACCOUNTING_SCHEMA.items()]).sort(
        "pool", "origin", "upstream_index"
    )
    kept = df.filter(pl.col("status") == "kept").sort("item_id")
    items = [
        (
            r["item_id"],
            r["pool"],
            POOL_BY_NAME[r["pool"]].set_type,
            r["category"],
            _with_category(r["item_json"], r["category"]),
        )
        for r in kept.select("item_id", "pool", "category", "item_json").iter_rows(named=True)
    ]
    return pl.DataFrame(items, schema=ITEM_SCHEMA, orient="row"), accounting


def _with_category(item_json: str, category: str | None) -> str:
    if category is None:
        return item_json
    item = CanonicalItem.model_validate_json(item_json)
    item.source.metadata.category = Category(category)
    return item.model_dump_json()


def criteria_table(adapted: pl.DataFrame, items: pl.DataFrame) -> pl.DataFrame:
    """The criteria side table for the kept rubric items, one row per criterion id."""
    kept = adapted.join(items.select("item_id"), on="item_id", how="semi").filter(pl.col("criteria_json").is_not_null())
    rows: dict[str, dict[str, Any]] = {}
    for text in kept["criteria_json"]:
        for c in json.loads(text):
            rows.setdefault(c["criterion_id"], c)
    schema = {"criterion_id": pl.String, "criterion": pl.String, "tags": pl.List(pl.String)}
    return pl.DataFrame([rows[k] for k in sorted(rows)], schema=schema)
