"""The plan printed by ``mama-pipeline plan`` and shown on the ``llm_plan`` asset."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from mama_pipeline.plan._bill import Bill
from mama_pipeline.plan._planners import PLANNERS, Inputs, stage_bills
from mama_pipeline.plan._stage_bounds import RawInputs
from mama_pipeline.resources import LLMResource, SettingsResource
from mama_pipeline.store import Store
from mama_pipeline.store.table_schema import table_schema

BILL_SCHEMA = table_schema("llm_plan")


def plan_bills(
    config_path: str,
    assets: Iterable[str] | None = None,
    latency_s: float | None = None,
    rebuilt: dict[str, set[str]] | None = None,
    bounds: bool = True,
    rate_per_server: float | None = None,
    exact: bool = True,
) -> list[Bill]:
    """The bills of the LLM-calling ``assets`` (None: all), in pipeline order, sending nothing and writing
    nothing into the data folder when its store does not exist yet; ``bounds``: each with its bound from the
    configuration and the raw inputs; ``rate_per_server``: requests a second per server, to time the bounds;
    ``exact``: the exact plans from the store too (False: the bounds alone, the store is not read)."""
    settings = SettingsResource(config_path=config_path)
    inp = Inputs(settings.get(), Store(settings.get().db_path))
    raw = RawInputs(settings.get()) if bounds else None
    wanted = None if assets is None else set(assets)
    llm = LLMResource(settings=settings)
    return [
        b
        for p in PLANNERS
        if wanted is None or p.asset in wanted
        for b in stage_bills(p, inp, llm, latency_s, (rebuilt or {}).get(p.asset, ()), raw, rate_per_server, exact)
    ]


def bills_frame(bills: list[Bill]) -> pl.DataFrame:
    return pl.DataFrame([b.row() for b in bills], schema=BILL_SCHEMA, orient="row")


def _n(v: int | None) -> str:
    return "?" if v is None else f"{v:,}"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 3600 else f"{seconds:,.1f} s"


def render(bills: list[Bill], gpus_per_server: int | None = None) -> str:
    """One block per (asset, stage), then the totals: the bounds (and their time and GPU-hours), and what would
    be sent of the stage plans computed from the store."""
    if not bills:
        return "No LLM stage in this selection: nothing would be sent."
    lines = []
    for b in bills:
        lines.append(f"{b.asset} · {b.stage} · {b.model}")
        if b.bound_basis:
            timed = "" if b.bound_s is None else f"; {_hours(b.bound_s)} on {b.servers} server(s)"
            gpu = (
                f", {b.bound_s * b.servers * gpus_per_server / 3600:,.1f} GPU-hours"
                if b.bound_s is not None and gpus_per_server
                else ""
            )
            lines.append(f"  bound: at most {_n(b.bound)} requests ({b.bound_basis}){timed}{gpu}")
            lines.append(f"  prompt tokens: at most {_n(b.bound_tokens)} ({b.bound_tokens_basis})")
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
    lines.append("")
    bounded = [b for b in bills if b.bound_basis]
    if bounded:
        known = [b for b in bounded if b.bound is not None]
        timed = [b for b in known if b.bound_s is not None]
        line = (
            f"Bound (before anything is built, from the configuration and the raw inputs): at most "
            f"{sum(b.bound for b in known):,} requests ({len(known)} of {len(bounded)} stage plans bounded) and "
            f"{sum(b.bound_tokens or 0 for b in known):,} prompt tokens "
            f"({sum(b.bound_tokens is not None for b in bounded)} of {len(bounded)} bounded)"
        )
        if timed:
            line += f"; {_hours(sum(b.bound_s for b in timed))} if the stages run one after another"
            if len(timed) < len(known):
                line += f" (not counting {len(known) - len(timed)} stage plans with no rate or latency)"
            if gpus_per_server:
                gpu_h = sum(b.bound_s * b.servers * gpus_per_server for b in timed) / 3600
                line += f", {gpu_h:,.1f} GPU-hours at {gpus_per_server} GPUs a server"
        lines.append(line)
    planned = [b for b in bills if b.requests is not None]
    timed = [b.expected_s for b in planned if b.expected_s is not None and b.to_send]
    untimed = sum(1 for b in planned if b.expected_s is None and b.to_send)
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
