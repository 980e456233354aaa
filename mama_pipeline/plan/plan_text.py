"""The plan printed by ``mama-pipeline plan`` and shown on the ``llm_plan`` asset."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from mama_pipeline.plan.bill import Bill
from mama_pipeline.plan.planners import PLANNERS, Inputs, stage_bills
from mama_pipeline.resources import LLMResource, SettingsResource
from mama_pipeline.store import Store

BILL_SCHEMA = {
    "asset": pl.String,
    "stage": pl.String,
    "model": pl.String,
    "requests": pl.Int64,
    "cached": pl.Int64,
    "to_send": pl.Int64,
    "prompt_tokens": pl.Int64,
    "tokens_counted_by": pl.String,
    "max_tokens": pl.Int64,
    "slots": pl.Int64,
    "latency_s": pl.Float64,
    "latency_from": pl.String,
    "expected_s": pl.Float64,
    "over_budget": pl.String,
    "note": pl.String,
}


def plan_bills(
    config_path: str,
    assets: Iterable[str] | None = None,
    latency_s: float | None = None,
    rebuilt: dict[str, set[str]] | None = None,
) -> list[Bill]:
    """The bills of the LLM-calling ``assets`` (None: all), in pipeline order, sending nothing."""
    settings = SettingsResource(config_path=config_path)
    inp = Inputs(settings.get(), Store(settings.get().db_path))
    wanted = None if assets is None else set(assets)
    llm = LLMResource(settings=settings)
    return [
        b
        for p in PLANNERS
        if wanted is None or p.asset in wanted
        for b in stage_bills(p, inp, llm, latency_s, (rebuilt or {}).get(p.asset, ()))
    ]


def bills_frame(bills: list[Bill]) -> pl.DataFrame:
    return pl.DataFrame([b.row() for b in bills], schema=BILL_SCHEMA, orient="row")


def _n(v: int | None) -> str:
    return "?" if v is None else f"{v:,}"


def render(bills: list[Bill]) -> str:
    """One block per (asset, stage), then the totals of what would be sent."""
    if not bills:
        return "No LLM stage in this selection: nothing would be sent."
    lines = []
    for b in bills:
        lines.append(f"{b.asset} · {b.stage} · {b.model}")
        if b.requests is None:
            lines.append(f"  {b.note}")
            continue
        repeats = b.requests - b.cached - b.to_send
        again = f" ({repeats:,} share a prompt with another request: asked once)" if repeats else ""
        lines.append(
            f"  requests {_n(b.requests)}: {_n(b.cached)} cached, {_n(b.to_send)} to send{again}; "
            f"prompt tokens to send {_n(b.prompt_tokens)} ({b.tokens_counted_by})"
        )
        expected = "unknown" if b.expected_s is None else f"{b.expected_s:,.1f} s"
        latency = "none" if b.latency_s is None else f"{b.latency_s:.2f} s a request"
        lines.append(
            f"  completion cap {b.max_tokens:,} tokens a request (up to {b.max_tokens * b.to_send:,} "
            f"completion tokens); expected {expected} with {b.slots} answered at once "
            f"(latency {latency}: {b.latency_from})"
        )
        if b.over_budget:
            lines.append(f"  OVER BUDGET: {b.over_budget}")
        if b.note:
            lines.append(f"  note: {b.note}")
    planned = [b for b in bills if b.requests is not None]
    timed = [b.expected_s for b in planned if b.expected_s is not None and b.to_send]
    untimed = sum(1 for b in planned if b.expected_s is None and b.to_send)
    lines.append("")
    if untimed and not timed:
        time = "expected time unknown (no latency recorded or given: --latency-s)"
    else:
        time = f"{sum(timed):,.1f} s if the stages run one after another" + (
            f", not counting {untimed} stage plans with requests to send but no latency" if untimed else ""
        )
    lines.append(
        f"To send: {sum(b.to_send for b in planned):,} requests, "
        f"{sum(b.prompt_tokens for b in planned):,} prompt tokens (stage plans computed: {len(planned)} of "
        f"{len(bills)}); {time}"
    )
    return "\n".join(lines)
