"""The bill of an LLM stage before it runs: requests, cache hits, prompt tokens, completion cap, time.

Before anything is built, a bound (:mod:`mama_pipeline.plan._stage_bounds`) caps the requests from the
configuration and the raw inputs. Once a stage's inputs are in the store, a planner
(:mod:`mama_pipeline.plan._planners`) renders the requests it would send from them; :func:`bill` asks the cache which of them are answered (the client's own
cache keys, nothing sent), counts the prompt tokens of the others and prices their time from the
latencies the cache recorded for the same stage, model and endpoint.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from mama_pipeline.llm.budget import budget_breach
from mama_pipeline.llm.client import CACHE_TABLE, LLMClient, LLMRequest
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.llm.tokens import counter_for

NOT_BUILT = "inputs not yet built"


@dataclass(frozen=True)
class PlannedRun:
    """One ``client.run`` a step would make."""

    template: PromptTemplate
    output_model: type[BaseModel]
    requests: Sequence[LLMRequest]


@dataclass(frozen=True)
class StagePlan:
    """What one asset would ask one stage: its runs, or None with the reason they are not computed."""

    asset: str
    stage: str  # an llm.* stage, or system:<name>
    cfg: StageSettings
    runs: Iterable[PlannedRun] | None
    note: str = ""


@dataclass(frozen=True)
class Bill:
    asset: str
    stage: str
    model: str
    requests: int | None  # None: not computed (see note)
    cached: int | None
    to_send: int | None  # distinct cache keys not in the cache
    prompt_tokens: int | None  # of the requests to send
    tokens_counted_by: str
    max_tokens: int  # completion-token cap per request
    slots: int  # concurrency x endpoints
    latency_s: float | None  # per request
    latency_from: str
    expected_s: float | None
    over_budget: str
    note: str
    bound: int | None = None  # most requests the asset can send the stage, from the configuration and raw inputs
    bound_basis: str = ""  # how the bound was computed, or why it was not
    servers: int = 1  # base URLs (the embedded server: 1)
    bound_s: float | None = None  # time to send the bound: at the given rate per server, or at the latency
    bound_tokens: int | None = None  # most prompt tokens in those requests (mama_pipeline.plan._prompt_bounds)
    bound_tokens_basis: str = ""

    def row(self) -> dict:
        return self.__dict__.copy()


def recorded_latency(client: LLMClient) -> tuple[float | None, int]:
    """Median latency (s) of the answers the cache holds for this stage, model and endpoint, and their count."""
    with client.store.connect() as con:  # the client made the table when it opened
        rows = con.execute(
            f"SELECT latency_s FROM {CACHE_TABLE} WHERE stage = ? AND model = ? AND endpoint = ? "
            "AND status = 'ok' AND latency_s > 0",
            [client.stage, client.model, client.endpoint],
        ).fetchall()
    return (statistics.median(r[0] for r in rows), len(rows)) if rows else (None, 0)


def slots_of(cfg: StageSettings, embedded_slots: int) -> int:
    """Requests answered at once: concurrency per base URL, or the embedded server's slots when fewer."""
    return cfg.concurrency * len(cfg.base_urls) if cfg.base_urls else min(cfg.concurrency, embedded_slots)


def bound_seconds(
    bound: int | None, servers: int, slots: int, latency_s: float | None, rate_per_server: float | None
) -> float | None:
    """Time to send ``bound`` requests: at ``rate_per_server`` requests a second on each server when given, else
    ``ceil(bound / slots) x latency_s``; None when neither is known."""
    if bound is None:
        return None
    if rate_per_server is not None:
        return round(bound / (rate_per_server * servers), 1)
    return None if latency_s is None else round(math.ceil(bound / slots) * latency_s, 1)


def bill(
    plan: StagePlan,
    client: LLMClient | None,
    latency_s: float | None = None,
    slots: int | None = None,
    model: str | None = None,
) -> Bill:
    """The bill of ``plan`` under ``client`` (which sends nothing here; None: no store yet, so no cache to
    ask, and the plan must have no runs); ``latency_s``: the latency per request to price with when the
    cache recorded none for the stage; ``slots``: requests answered at once (default: the stage's
    concurrency per base URL); ``model``: the model named when there is no client."""
    cfg = plan.cfg
    slots = slots or slots_of(cfg, cfg.concurrency)
    name = client.model if client is not None else model or ""
    common = dict(asset=plan.asset, stage=plan.stage, model=name, max_tokens=cfg.max_tokens, slots=slots)
    common["servers"] = max(len(cfg.base_urls), 1)
    if plan.runs is None or client is None:
        return Bill(
            **common,
            requests=None,
            cached=None,
            to_send=None,
            prompt_tokens=None,
            tokens_counted_by="",
            latency_s=latency_s,
            latency_from="--latency-s" if latency_s is not None else "",
            expected_s=None,
            over_budget="",
            note=plan.note,
        )
    counter = counter_for(cfg.tokenizer or client.model)
    requests = cached = to_send = tokens = 0
    for run in plan.runs:
        keys, hits, todo = client.pending(run.template, run.output_model, run.requests)
        requests += len(keys)
        cached += sum(k in hits for k in keys)
        to_send += len(todo)
        tokens += sum(counter.count(r.messages) for r in todo.values())
    recorded, n = recorded_latency(client)
    if recorded is not None:
        latency, source = recorded, f"median of {n} cached ok answers"
    elif latency_s is not None:
        latency, source = latency_s, "--latency-s"
    else:
        latency, source = None, "none recorded; give --latency-s"
    expected = math.ceil(to_send / slots) * latency if latency is not None else None
    over = budget_breach(plan.stage, cfg, to_send, tokens, counter.method) or ""
    return Bill(
        **common,
        requests=requests,
        cached=cached,
        to_send=to_send,
        prompt_tokens=tokens,
        tokens_counted_by=counter.method,
        latency_s=latency,
        latency_from=source,
        expected_s=None if expected is None else round(expected, 1),
        over_budget=over,
        note=plan.note,
    )
