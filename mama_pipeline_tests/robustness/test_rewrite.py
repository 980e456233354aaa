"""LLM rewrites and the same-information gate against the fault-injecting server."""

from __future__ import annotations

import contextlib
import json

import polars as pl
import pytest

from mama_pipeline.robustness._variants import SEPARATOR, decisions_frame, kept_variants, rewrite_decisions
from mama_pipeline.robustness.settings import KindSettings, RobustnessSettings

KINDS = [KindSettings(name="telegraphic", rewrite="telegraphic"), KindSettings(name="codeswitch", rewrite="codeswitch")]


def answer(**fields) -> str:
    return f"[[answer:{json.dumps(fields)}]]"


QUERIES = pl.DataFrame(
    {
        "query_id": ["q_00001", "q_00002", "q_00003", "q_00004", "q_00005", "q_00006"],
        "query_text": [
            "What dose of oxytocin prevents PPH? "
            + answer(rewrite="oxytocin dose PPH?", same_information=True, reason="same drug and dose"),
            "When is magnesium sulfate repeated? "
            + answer(rewrite="MgSO4 when?", same_information=False, reason="drops the repeat"),
            "How is sepsis treated in the newborn? " + answer(rewrite="sepsis tx newborn?"),  # gate answer unusable
            "How is a breech birth assisted? [[fault:500]]",
            "Which fluids for shock? " + answer(rewrite="   "),
            "What is eclampsia? " + answer(rewrite=" ".join(["word"] * 50), same_information=True, reason="r"),
        ],
        "tier": ["high"] * 6,
        "source": ["a"] * 6,
    }
)


def run(make_client, settings: RobustnessSettings):
    def open_client(stage):
        return contextlib.nullcontext(make_client(stage=stage, max_retries=1, parse_retries=0))

    return rewrite_decisions(open_client, QUERIES, KINDS, settings, rewriter_reasoning=False, gate_reasoning=False)


def test_only_gate_approved_rewrites_are_kept_and_every_rejection_has_its_reason(make_client, fake_llm):
    before = fake_llm.stats()
    out = run(make_client, RobustnessSettings())
    decisions = decisions_frame(out.decisions)
    status = dict(decisions.filter(pl.col("kind") == "telegraphic").select("parent_id", "status").iter_rows())
    assert status == {
        "q_00001": "kept",
        "q_00002": "gate_rejected",
        "q_00003": "gate_failed",
        "q_00004": "rewrite_failed",
        "q_00005": "empty_rewrite",
        "q_00006": "too_long",
    }
    rows = {r["variant_id"]: r for r in decisions.iter_rows(named=True)}
    assert (
        rows["q_00002~telegraphic"]["reason"] == "drops the repeat"
        and rows["q_00002~telegraphic"]["gate"] == "rejected"
    )
    assert rows["q_00003~telegraphic"]["gate"] == "failed" and rows["q_00003~telegraphic"]["error"].startswith(
        "parse_failed"
    )
    assert rows["q_00004~telegraphic"]["error"].startswith("transport_failed: HTTP 500")
    assert rows["q_00001~telegraphic"]["variant_text"] == "oxytocin dose PPH?"
    variants = kept_variants(decisions, QUERIES)
    assert variants["variant_id"].to_list() == ["q_00001~codeswitch", "q_00001~telegraphic"]
    assert all(v.split(SEPARATOR)[0] == p for v, p in variants.select("variant_id", "parent_id").iter_rows())
    # 12 rewrites (the 500 retried once per kind); the gate is asked only for the 3 usable rewrites per
    # kind, and both kinds' rewrites here are the same text, so the client asks each distinct prompt once
    assert out.metadata["telegraphic/query_rewriter/requests"] == 6
    assert out.metadata["gate/rewrite_gate/requests"] == 6
    assert out.metadata["gate/rewrite_gate/http_calls"] == 3
    assert fake_llm.stats()["chat_calls"] - before["chat_calls"] == 12 + 2 + 3


def test_a_failed_gate_keeps_the_rewrite_only_when_configured(make_client):
    decisions = decisions_frame(run(make_client, RobustnessSettings(keep_when_gate_fails=True)).decisions)
    kept = decisions.filter(pl.col("status") == "kept")
    assert sorted(kept["variant_id"].to_list()) == sorted(
        ["q_00001~telegraphic", "q_00001~codeswitch", "q_00003~telegraphic", "q_00003~codeswitch"]
    )
    assert kept.filter(pl.col("parent_id") == "q_00003")["gate"].to_list() == ["failed", "failed"]


def test_rewrites_are_answered_from_the_cache_on_a_second_run(make_client, fake_llm):
    first = decisions_frame(run(make_client, RobustnessSettings()).decisions)
    before = fake_llm.stats()["chat_calls"]
    second = decisions_frame(run(make_client, RobustnessSettings()).decisions)
    assert second.equals(first)
    assert fake_llm.stats()["chat_calls"] - before == 4  # only the transport failures are asked again (2 x 2 attempts)


def budget_run(make_client, **budget):
    def open_client(stage):
        return contextlib.nullcontext(make_client(stage=stage, max_retries=1, parse_retries=0, **budget))

    return rewrite_decisions(
        open_client, QUERIES, KINDS, RobustnessSettings(), rewriter_reasoning=False, gate_reasoning=False
    )


def prompt_chars_per_kind() -> list[int]:
    """Estimated prompt tokens of each kind's 6 rewrite requests: characters / 4, rounded up per request."""
    from mama_pipeline.robustness._rewrite_prompt import rewrite_template

    out = []
    for kind in KINDS:
        template = rewrite_template(kind.rewrite, RobustnessSettings().max_rewrite_words, False)
        out.append(
            sum(-(-sum(len(m["content"]) for m in template.render(query=t)) // 4) for t in QUERIES["query_text"])
        )
    return out


def test_the_rewriter_budget_covers_every_kind_before_the_first_is_sent(make_client, fake_llm):
    from mama_pipeline.llm.budget import BudgetExceeded

    # 6 queries x 2 kinds = 12 new requests; each kind alone (6) fits a budget of 8, both together do not
    before = fake_llm.stats()["chat_calls"]
    with pytest.raises(BudgetExceeded, match=r"^stage query_rewriter: .*12 new requests > max_new_requests 8$"):
        budget_run(make_client, max_new_requests=8)
    assert fake_llm.stats()["chat_calls"] == before  # not even the first kind was sent
    tokens = prompt_chars_per_kind()
    limit = max(tokens) + 1  # each kind alone fits, the sum does not
    assert sum(tokens) > limit
    with pytest.raises(
        BudgetExceeded,
        match=rf"^stage query_rewriter: .*: {sum(tokens)} new prompt tokens "
        rf"\(estimate .*\) > max_new_prompt_tokens {limit}$",
    ):
        budget_run(make_client, max_new_prompt_tokens=limit)
    assert fake_llm.stats()["chat_calls"] == before
    # the whole stage within its budget is sent: 12 rewrites (+2 retried 500s), then the gate's 3 distinct prompts
    out = budget_run(make_client, max_new_requests=12)
    assert out.metadata["codeswitch/query_rewriter/requests"] == 6
    assert fake_llm.stats()["chat_calls"] - before == 12 + 2 + 3
