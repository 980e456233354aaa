"""The query-writer prompt and its output models."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mama_pipeline.queries._query_prompt import QueryAnswer, answer_model, query_writer_template


def test_word_limit_and_reasoning_are_part_of_the_prompt_hash():
    base = query_writer_template(20, reasoning_field=True)
    assert "at most 20 words" in base.system and '"reasoning"' in base.system
    assert query_writer_template(15, True).hash != base.hash
    assert query_writer_template(20, False).hash != base.hash
    assert query_writer_template(20, True).hash == base.hash
    assert base.id == "query_writer"


def test_user_message_carries_source_section_and_text():
    messages = query_writer_template(20, False).render(source="msf", section="Ch 3 > PPH", text="Give oxytocin.")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Source: msf" in messages[1]["content"] and "Ch 3 > PPH" in messages[1]["content"]
    assert "<<<\nGive oxytocin.\n>>>" in messages[1]["content"]


def test_output_models():
    assert list(answer_model(True).model_fields) == ["reasoning", "query", "reason"]
    assert answer_model(False) is QueryAnswer
    assert QueryAnswer.model_validate({"query": None, "reason": "contents page"}).query is None
    with pytest.raises(ValidationError):
        QueryAnswer.model_validate({"reason": "query missing"})  # null must be explicit


def test_answer_lengths_are_capped_in_the_schema_but_not_below_the_word_rule():
    schema = answer_model(True).model_json_schema()["properties"]
    assert schema["reasoning"]["maxLength"] >= 500
    query_cap = next(o["maxLength"] for o in schema["query"]["anyOf"] if o.get("type") == "string")
    assert query_cap >= 21 * 12  # a 21-word question still reaches the counted too_long rule
    with pytest.raises(ValidationError):
        QueryAnswer.model_validate({"query": "x" * (query_cap + 1), "reason": "r"})
