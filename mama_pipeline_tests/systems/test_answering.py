"""Requests a system is sent: templates per track, retrieved chunks with their ids, conversations."""

from __future__ import annotations

import polars as pl

from mama_pipeline.llm.client import FreeText
from mama_pipeline.systems._answering import CONTEXT_SCHEMA, retrieval_queries, track_requests
from mama_pipeline.systems._items import benchmark_items
from mama_pipeline.systems._systems_prompts import LetterAnswer, answer_template
from mama_pipeline.systems.settings import SystemSettings
from mama_pipeline_tests.systems.fixtures import items_frame, mcq, rubric, short

ITEMS = benchmark_items(
    items_frame(
        [
            mcq("m1", "Which drug prevents eclamptic seizures?", ["oxytocin", "magnesium sulfate", "aspirin"], 1),
            short("s1", "A newborn is cold. What do you do?", "Dry and skin-to-skin."),
            rubric("r1", "How warm should the room be?", [("mentions 25 C", 3)]),
        ]
    )
)
CONTEXTS = pl.DataFrame(
    {
        "item_id": ["m1", "m1"],
        "rank": [1, 2],
        "chunk_id": ["aaaa", "bbbb"],
        "text": ["Magnesium sulfate prevents seizures.", "Oxytocin after birth."],
    },
    schema=CONTEXT_SCHEMA,
)


def test_rag_prompt_carries_chunks_with_ids_and_records_them():
    rag = SystemSettings(name="rag", mode="rag", retriever="bm25", k=2, system_prompt="Be a midwife.")
    template, model, requests, given = track_requests(rag, "mcq", ITEMS, CONTEXTS)
    assert model is LetterAnswer
    (req,) = requests
    system, user = req.messages
    assert system == {"role": "system", "content": "Be a midwife."}
    assert (
        user["content"].index("[chunk aaaa]")
        < user["content"].index("[chunk bbbb]")
        < user["content"].index("Which drug")
    )
    assert "A) oxytocin\nB) magnesium sulfate\nC) aspirin" in user["content"] and "one of ABC" in user["content"]
    assert given == {"m1": ["aaaa", "bbbb"]}


def test_closed_book_text_mode_and_conversations():
    closed = SystemSettings(name="c", mcq_output="text")
    _, model, (req,), given = track_requests(closed, "mcq", ITEMS, pl.DataFrame(schema=CONTEXT_SCHEMA))
    assert (
        model is FreeText
        and "'Answer: $LETTER'" in req.messages[1]["content"]
        and "chunk" not in req.messages[1]["content"]
    )
    assert given == {"m1": []}
    _, model, (req,), _ = track_requests(closed, "rubric", ITEMS, pl.DataFrame(schema=CONTEXT_SCHEMA))
    assert model is FreeText and req.messages[-1] == {"role": "user", "content": "How warm should the room be?"}
    assert (
        retrieval_queries(ITEMS).filter(pl.col("query_id") == "r1")["query_text"][0] == "How warm should the room be?"
    )


def test_template_hash_follows_the_system_prompt():
    a = answer_template("short_answer", "one prompt")
    b = answer_template("short_answer", "another prompt")
    assert a.hash != b.hash and a.id == b.id


def test_free_text_answers_send_no_schema_and_are_cached(make_client, fake_llm):
    import pytest

    from mama_pipeline.llm.client import LLMRequest, parse_answer

    client = make_client(stage="system:c")
    template = answer_template("short_answer", "Be brief.")
    requests = [LLMRequest("s1", template.render(context="", question="What warms a newborn?"))]
    before = fake_llm.stats()["chat_calls"]
    (res,) = client.run(template, FreeText, requests).results
    assert res.ok and res.value["text"].startswith("fake free-text answer")  # the server saw no response_format
    (again,) = client.run(template, FreeText, requests).results
    assert again.from_cache and again.value == res.value and fake_llm.stats()["chat_calls"] == before + 1
    with pytest.raises(ValueError, match="empty answer"):
        parse_answer("  \n", FreeText)
