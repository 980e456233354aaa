"""Test-only definitions: two independent assets, one LLM asset and two priority probes over the real resources."""

import os
import time

import dagster as dg
import polars as pl
from pydantic import BaseModel

from mama_pipeline.llm.client import LLMRequest
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.resources import LLMResource, StoreResource, shared_resources


def _slow_table(name: str) -> pl.DataFrame:
    start = time.time()
    time.sleep(3)
    return pl.DataFrame({"asset": [name], "start": [start], "end": [time.time()]})


@dg.asset
def left_table() -> pl.DataFrame:
    return _slow_table("left")


@dg.asset
def right_table() -> pl.DataFrame:
    return _slow_table("right")


class Probe(BaseModel):
    label: int


PROBE = PromptTemplate(id="probe", system="probe", user="{text}")


@dg.asset
def llm_probe(context: dg.AssetExecutionContext, llm: LLMResource) -> dg.MaterializeResult:
    with llm.client("judge", context) as client:
        report = client.run(PROBE, Probe, [LLMRequest(f"p{i}", PROBE.render(text=f"probe {i}")) for i in range(3)])
    return dg.MaterializeResult(metadata=report.metadata())


def _priorities(store: StoreResource) -> pl.DataFrame:
    """The nice level of every thread of this step's process, after its first use of the store."""
    store.get()
    return pl.DataFrame(
        {"nice": [os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")], "pid": os.getpid()}
    )


@dg.asset
def plain_priorities(store: StoreResource) -> pl.DataFrame:
    return _priorities(store)


@dg.asset
def llm_priorities(store: StoreResource, llm: LLMResource) -> pl.DataFrame:
    return _priorities(store)


defs = dg.Definitions(
    assets=[left_table, right_table, llm_probe, plain_priorities, llm_priorities], resources=shared_resources()
)
