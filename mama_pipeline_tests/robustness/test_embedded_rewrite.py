"""One real rewrite (and its gate call) through the embedded llama.cpp server (SmolLM2-135M from its wheel)."""

from __future__ import annotations

import contextlib

import polars as pl
import pytest

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.embedded_server import embedded_server, endpoint_identity
from mama_pipeline.llm.settings import EmbeddedServerSettings, StageSettings
from mama_pipeline.robustness._variants import DECISION_SCHEMA, decisions_frame, rewrite_decisions
from mama_pipeline.robustness.settings import KindSettings, RobustnessSettings

STATUSES = {
    "kept",
    "identical_to_parent",
    "rewrite_failed",
    "empty_rewrite",
    "too_long",
    "gate_failed",
    "gate_rejected",
}


@pytest.mark.slow
def test_a_telegraphic_rewrite_through_the_embedded_model(store, tmp_path):
    server = EmbeddedServerSettings(n_parallel=1, n_ctx=2048)
    queries = pl.DataFrame(
        {
            "query_id": ["q_00001"],
            "query_text": ["What dose of oxytocin prevents postpartum haemorrhage?"],
            "tier": ["high"],
            "source": ["a"],
        }
    )
    with embedded_server(server, tmp_path / "server.log") as url:

        def open_client(stage):
            return contextlib.nullcontext(
                LLMClient(
                    stage,
                    StageSettings(max_tokens=128, reasoning="server"),
                    store,
                    endpoint=endpoint_identity(server),
                    model=server.model_alias,
                    resolve_urls=lambda: [url],
                    smoke_test=True,
                )
            )

        run = rewrite_decisions(
            open_client,
            queries,
            [KindSettings(name="telegraphic", rewrite="telegraphic")],
            RobustnessSettings(),
            rewriter_reasoning=False,
            gate_reasoning=False,
        )
    (row,) = decisions_frame(run.decisions).iter_rows(named=True)
    assert set(row) == set(DECISION_SCHEMA) and row["variant_id"] == "q_00001~telegraphic"
    assert row["status"] in STATUSES and row["model"] == server.model_alias
    assert run.metadata["telegraphic/query_rewriter/http_calls"] >= 1
    if row["status"] == "rewrite_failed":  # a failure is recorded with its reason, never kept
        assert row["error"]
    else:
        assert row["variant_text"] is not None
    if row["status"] in ("kept", "gate_rejected", "gate_failed"):  # the gate was asked in a second call
        assert row["gate"] in ("passed", "rejected", "failed") and row["gate_model"] == server.model_alias
