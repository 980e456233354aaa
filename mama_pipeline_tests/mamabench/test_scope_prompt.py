"""The scope classifier's prompt: categories, rules, modes, and the answer models."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mama_pipeline.mamabench._schema import Category
from mama_pipeline.mamabench._scope_prompt import (
    SCOPE_TEMPLATE,
    ScopeVerdict,
    ScopeVerdictWithReasoning,
    render_conversation,
    render_mcq,
    render_messages,
    verdict_model,
)


def test_the_prompt_names_every_category_and_rule() -> None:
    assert SCOPE_TEMPLATE.id == "scope_classifier"
    for c in Category:
        assert c.value in SCOPE_TEMPLATE.system
    assert "MATERNAL, NEONATAL, CHILD_HEALTH, SEXUAL_AND_REPRODUCTIVE_HEALTH" in SCOPE_TEMPLATE.system  # tie order
    assert "primary clinical concept" in SCOPE_TEMPLATE.system
    assert "28 days" in SCOPE_TEMPLATE.system and "18" in SCOPE_TEMPLATE.system
    assert "Disregard how the writer introduces themselves" in SCOPE_TEMPLATE.system


def test_mcq_mode_shows_the_options_and_conversation_mode_labels_roles() -> None:
    mcq = render_messages("mcq", render_mcq("Drug for eclampsia?", ["Magnesium sulphate", "Diazepam"]))
    assert mcq[0] == {"role": "system", "content": SCOPE_TEMPLATE.system}
    assert "multiple-choice" in mcq[1]["content"]
    assert mcq[1]["content"].endswith("Question:\nDrug for eclampsia?\n\nOptions:\nA. Magnesium sulphate\nB. Diazepam")
    convo = render_conversation(
        [("user", "I am a nurse. Baby is yellow? {x}"), ("assistant", "How old?"), ("user", "3 days")]
    )
    msgs = render_messages("open_ended", convo)
    assert "[USER]\nI am a nurse. Baby is yellow? {x}\n\n[ASSISTANT]\nHow old?\n\n[USER]\n3 days" in msgs[1]["content"]
    assert "conversation" in msgs[1]["content"]


def test_answer_models_put_reasoning_first_and_reject_unknown_categories() -> None:
    assert verdict_model("json_field") is ScopeVerdictWithReasoning
    assert verdict_model("server") is ScopeVerdict
    assert list(ScopeVerdictWithReasoning.model_json_schema()["properties"]) == ["reasoning", "category", "rationale"]
    with pytest.raises(ValidationError):
        ScopeVerdict.model_validate({"category": "OBSTETRICS", "rationale": "x"})


def test_the_hash_follows_the_text() -> None:
    from mama_pipeline.llm.prompt_template import PromptTemplate

    edited = PromptTemplate(
        SCOPE_TEMPLATE.id, SCOPE_TEMPLATE.system.replace("NONE is the default", "NONE is default"), SCOPE_TEMPLATE.user
    )
    assert edited.hash != SCOPE_TEMPLATE.hash


def test_length_caps_are_advertised_but_not_enforced_on_parse() -> None:
    props = ScopeVerdictWithReasoning.model_json_schema()["properties"]
    assert props["reasoning"]["maxLength"] == 600 and props["rationale"]["maxLength"] == 200
    assert ScopeVerdict.model_json_schema()["properties"]["rationale"]["maxLength"] == 200
    long = ScopeVerdictWithReasoning.model_validate(
        {"reasoning": "x" * 900, "category": "NONE", "rationale": "y" * 300}
    )
    assert long.category is Category.NONE
