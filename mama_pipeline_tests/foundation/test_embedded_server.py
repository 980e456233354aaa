"""One real call to the embedded llama.cpp server (SmolLM2-135M from its wheel)."""

from __future__ import annotations

import urllib.request
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from mama_pipeline.llm.client import LLMClient, LLMRequest
from mama_pipeline.llm.embedded_server import embedded_server, endpoint_identity
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.llm.settings import EmbeddedServerSettings, StageSettings


class Scope(BaseModel):
    reasoning: str = Field(max_length=300)
    category: Literal["MATERNAL", "NEONATAL", "CHILD_HEALTH", "SEXUAL_AND_REPRODUCTIVE_HEALTH", "NONE"]


@pytest.mark.slow
def test_embedded_server_answers_schema_valid_json_and_stops(store, tmp_path):
    settings = EmbeddedServerSettings(n_parallel=2, n_ctx=4096)
    tpl = PromptTemplate(id="smoke", system="Classify the clinical topic.", user="Question: {q}\nAnswer in JSON.")
    with embedded_server(settings, tmp_path / "server.log") as url:
        client = LLMClient(
            "classifier",
            StageSettings(max_tokens=128),
            store,
            endpoint=endpoint_identity(settings),
            model=settings.model_alias,
            resolve_urls=lambda: [url],
            smoke_test=True,
        )
        report = client.run(tpl, Scope, [LLMRequest("q1", tpl.render(q="How is postpartum haemorrhage treated?"))])
    (res,) = report.results
    assert res.ok, res.error
    Scope.model_validate(res.value)
    assert res.completion_tokens > 0 and report.calls == 1
    assert "smoke-test model" in report.metadata()["classifier/note"]
    assert report.metadata()["classifier/embedded_model"] is True
    with pytest.raises(OSError):  # stopped with the context
        urllib.request.urlopen(f"{url}/models", timeout=2)
