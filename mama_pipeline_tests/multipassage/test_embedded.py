"""Real calls through the embedded llama.cpp server: one writer request and one verifier request."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.llm.client import LLMClient
from mama_pipeline.llm.embedded_server import embedded_server, endpoint_identity
from mama_pipeline.llm.settings import EmbeddedServerSettings, StageSettings
from mama_pipeline.multipassage._multipassage_prompts import (
    verifier_model,
    verifier_template,
    writer_model,
    writer_template,
)
from mama_pipeline.multipassage._questions import verifier_requests, writer_requests, written_questions

CHUNKS = {
    "c1": {
        "source": "who-pph",
        "section": "Third stage",
        "text": "Give oxytocin 10 IU IM to every woman within one minute of the birth of the baby.",
    },
    "c2": {
        "source": "msf-eonc",
        "section": "PPH",
        "text": "If bleeding continues after oxytocin, give tranexamic acid "
        "1 g IV over 10 minutes within 3 hours of birth.",
    },
}
SETS = pl.DataFrame(
    {
        "set_id": ["ms_real"],
        "kind": ["cross_source"],
        "size": [2],
        "chunk_ids": [["c1", "c2"]],
        "source": ["who-pph"],
        "tier": ["high"],
        "corpus_version": ["v1"],
    }
)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_writer_and_verifier_answer_through_the_embedded_model(store, tmp_path):
    """SmolLM2-135M's answers carry no meaning; what is tested is the round trip: a real answer is either
    parsed against the stage's schema or recorded as unparseable, never turned into a question or verdict."""
    settings = EmbeddedServerSettings(n_parallel=1, n_ctx=2048)
    stage = StageSettings(max_tokens=64, reasoning="server", parse_retries=0, timeout_s=600)
    with embedded_server(settings, tmp_path / "server.log") as url:

        def client(name: str) -> LLMClient:
            return LLMClient(
                name,
                stage,
                store,
                endpoint=endpoint_identity(settings),
                model=settings.model_alias,
                resolve_urls=lambda: [url],
                smoke_test=True,
            )

        w_tpl = writer_template(30, False)
        w = client("query_writer").run(w_tpl, writer_model(False, 2), writer_requests(SETS, CHUNKS, w_tpl))
        written = written_questions(SETS, w.results, 30).with_columns(
            status=pl.lit("written"), question=pl.lit("Which drugs treat postpartum bleeding, and at what doses?")
        )
        v_tpl = verifier_template(False)
        whole_set = verifier_requests(written, SETS, CHUNKS, v_tpl)[-1:]  # the set as a whole
        v = client("judge").run(v_tpl, verifier_model(False), whole_set)
    (wr,), (vr,) = w.results, v.results
    assert w.calls == 1 and v.calls == 1 and vr.item_id == "ms_real|set"
    for res, model in ((wr, writer_model(False, 2)), (vr, verifier_model(False))):
        assert res.completion_tokens > 0 and res.status in ("ok", "parse_failed"), res.error
        if res.ok:
            model.model_validate(res.value)
        else:
            assert res.value is None and res.raw_text is not None
    status = written_questions(SETS, w.results, 30)["status"][0]
    assert (
        status == "writer_failed" if not wr.ok else status in ("written", "no_question", "empty_question", "too_long")
    )
