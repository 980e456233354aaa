"""Test-only definitions: two independent assets and one LLM asset over the real resources."""

import time

import dagster as dg
import polars as pl
from pydantic import BaseModel

from mama_pipeline.llm.client import LLMRequest
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.resources import LLMResource, shared_resources


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


defs = dg.Definitions(assets=[left_table, right_table, llm_probe], resources=shared_resources())
