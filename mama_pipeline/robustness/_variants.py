"""Query variants of the released queries: stable ids, deterministic kinds, LLM rewrites behind a gate.

A variant's id is its parent's id and its kind, ``q_00042~typo``. Every attempted
(parent, kind) gets one decision row; only ``kept`` rows become variants. A
candidate whose text equals its parent's (whitespace and case aside) is never
kept (``identical_to_parent``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import polars as pl

from mama_pipeline.llm.client import LLMClient, LLMRequest, LLMResult
from mama_pipeline.robustness._abbreviations import AbbreviationTable
from mama_pipeline.robustness._noise import add_noise, variant_seed
from mama_pipeline.robustness._rewrite_prompt import gate_model, gate_template, rewrite_model, rewrite_template
from mama_pipeline.robustness.settings import KindSettings, RobustnessSettings
from mama_pipeline.store.table_schema import table_schema

SEPARATOR = "~"
DECISION_SCHEMA = table_schema("variant_decisions")
VARIANT_COLUMNS = [
    "variant_id",
    "parent_id",
    "kind",
    "method",
    "query_text",
    "parent_text",
    "tier",
    "source",
    "seed",
    "recipe",
    "gate",
    "model",
    "prompt_hash",
    "gate_model",
    "gate_prompt_hash",
]
SPACE = re.compile(r"\s+")


def variant_id(parent_id: str, kind: str) -> str:
    return f"{parent_id}{SEPARATOR}{kind}"


def normalise(text: str) -> str:
    return SPACE.sub(" ", text).strip()


def same_text(a: str, b: str) -> bool:
    return normalise(a).casefold() == normalise(b).casefold()


def _row(parent_id: str, kind: KindSettings, **fields: Any) -> dict[str, Any]:
    row = {c: None for c in DECISION_SCHEMA}
    row.update(
        variant_id=variant_id(parent_id, kind.name),
        parent_id=parent_id,
        kind=kind.name,
        method="+".join(kind.steps) if kind.steps else f"llm:{kind.rewrite}",
        **fields,
    )
    return row


def deterministic_decisions(
    queries: pl.DataFrame, kind: KindSettings, table: AbbreviationTable, r: RobustnessSettings
) -> list[dict[str, Any]]:
    """Shorthand and noise steps, applied in the kind's order to every query."""
    rows = []
    for parent_id, text in queries.select("query_id", "query_text").sort("query_id").iter_rows():
        out, recipe, seed = text, [], None
        for step in kind.steps:
            if step == "shorthand":
                out, applied = table.apply(out)
                recipe.append("shorthand: " + ("; ".join(applied) or "no long form found"))
            else:
                seed = variant_seed(r.seed, parent_id, kind.name)
                out, counts = add_noise(out, r.noise, seed)
                recipe.append("noise: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
        status = "identical_to_parent" if same_text(out, text) else "kept"
        rows.append(_row(parent_id, kind, status=status, variant_text=out, seed=seed, recipe=" | ".join(recipe)))
    return rows


def rewrite_selection(queries: pl.DataFrame, n: int | None, seed: int) -> pl.DataFrame:
    """The queries the LLM kinds rewrite: all, or the first ``n`` in an order seeded per query id.

    A query's place depends only on its own id, so adding queries never reshuffles the others.
    """
    if n is None:
        return queries.sort("query_id")
    key = [hashlib.sha256(f"{seed}|{q}".encode()).hexdigest() for q in queries.get_column("query_id").to_list()]
    return queries.with_columns(_k=pl.Series(key)).sort("_k").head(n).drop("_k").sort("query_id")


@dataclass
class RewriteRun:
    decisions: list[dict[str, Any]]
    metadata: dict[str, Any]


def _failure(res: LLMResult) -> str:
    return f"{res.status}: {res.error}"


def rewrite_decisions(
    open_client: Callable[[str], AbstractContextManager[LLMClient]],
    queries: pl.DataFrame,
    kinds: list[KindSettings],
    r: RobustnessSettings,
    rewriter_reasoning: bool,
    gate_reasoning: bool,
) -> RewriteRun:
    """Ask the rewriter for each LLM kind, then the gate for every usable rewrite; one decision per pair.

    ``open_client(stage)`` opens the shared client of ``query_rewriter`` or ``rewrite_gate``; the two
    are opened one after the other (an embedded server serves one stage at a time).
    """
    texts = dict(queries.select("query_id", "query_text").iter_rows())
    g_template = gate_template(gate_reasoning)
    rows: dict[str, dict[str, Any]] = {}
    to_gate: list[LLMRequest] = []
    meta: dict[str, Any] = {}
    answer_model = rewrite_model(rewriter_reasoning)
    runs = []
    for kind in kinds:
        template = rewrite_template(kind.rewrite, r.max_rewrite_words, rewriter_reasoning)
        runs.append(
            (
                kind,
                template,
                [LLMRequest(variant_id(q, kind.name), template.render(query=t)) for q, t in sorted(texts.items())],
            )
        )
    with open_client("query_rewriter") as rewriter:
        rewriter.check_budget((t, answer_model, reqs) for _, t, reqs in runs)  # every kind, before the first is sent
        reports = [(kind, t, rewriter.run(t, answer_model, reqs)) for kind, t, reqs in runs]
        decoding = (rewriter.s.seed, rewriter.s.temperature)
    for kind, template, report in reports:
        meta.update({f"{kind.name}/{k}": v for k, v in report.metadata().items()})
        for res in report.results:
            parent_id = res.item_id.split(SEPARATOR)[0]
            common = dict(
                model=report.model,
                prompt_hash=template.hash,
                seed=decoding[0],
                recipe=f"{template.id} (temperature {decoding[1]})",
            )
            if not res.ok:
                rows[res.item_id] = _row(parent_id, kind, status="rewrite_failed", error=_failure(res), **common)
                continue
            text = normalise(res.value["rewrite"])
            status = None
            if not text:
                status = "empty_rewrite"
            elif same_text(text, texts[parent_id]):
                status = "identical_to_parent"
            elif len(text.split()) > r.max_rewrite_words:
                status = "too_long"
            rows[res.item_id] = _row(parent_id, kind, status=status, variant_text=text, **common)
            if status is None:
                to_gate.append(LLMRequest(res.item_id, g_template.render(query=texts[parent_id], rewrite=text)))
    if to_gate:
        with open_client("rewrite_gate") as gate:
            report = gate.run(g_template, gate_model(gate_reasoning), to_gate)
        meta.update({f"gate/{k}": v for k, v in report.metadata().items()})
        for res in report.results:
            row = rows[res.item_id]
            row.update(gate_model=report.model, gate_prompt_hash=g_template.hash)
            if not res.ok:
                row.update(
                    gate="failed", error=_failure(res), status="kept" if r.keep_when_gate_fails else "gate_failed"
                )
            elif res.value["same_information"]:
                row.update(gate="passed", status="kept", reason=res.value["reason"])
            else:
                row.update(gate="rejected", status="gate_rejected", reason=res.value["reason"])
    return RewriteRun([rows[k] for k in sorted(rows)], meta)


def decisions_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=DECISION_SCHEMA).sort("parent_id", "kind")


def kept_variants(decisions: pl.DataFrame, queries: pl.DataFrame) -> pl.DataFrame:
    """The kept variants with their parent's text, tier and source."""
    parents = queries.select(
        pl.col("query_id").alias("parent_id"), pl.col("query_text").alias("parent_text"), "tier", "source"
    )
    return (
        decisions.filter(pl.col("status") == "kept")
        .rename({"variant_text": "query_text"})
        .join(parents, on="parent_id", how="left")
        .select(VARIANT_COLUMNS)
        .sort("variant_id")
    )


def status_counts(decisions: pl.DataFrame) -> pl.DataFrame:
    """Decisions per kind and status (one row per kind, one column per status)."""
    if decisions.is_empty():
        return pl.DataFrame(schema={"kind": pl.String})
    return (
        decisions.pivot(on="status", index="kind", values="variant_id", aggregate_function="len")
        .fill_null(0)
        .sort("kind")
    )
