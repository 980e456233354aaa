"""The answerability gate and query writer: one prompt, one answer per sampled chunk, one request per chunk."""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel, Field

from mama_pipeline.llm.client import LLMRequest
from mama_pipeline.llm.prompt_template import PromptTemplate

TEMPLATE_ID = "query_writer"

SYSTEM = """You help build a search benchmark for midwives and other maternal and newborn health workers. You are shown one passage from a clinical guideline or a midwifery textbook.

First decide whether the passage passes: a clinician could answer a specific clinical question from this passage alone - about recognising or diagnosing a condition, managing it, drugs and doses, risk factors, emergencies, counselling, or a recommendation. Turn the passage down when it is teaching or assessment material (learning objectives, discussion or reflection prompts, exam or station instructions), a table of contents, a reference list, front matter or administration, or a fragment too thin to answer anything.

If it passes, write exactly one question that a midwife would type into a search box during her work:
- direct and natural, at most {max_words} words;
- specific enough that one or two guideline sections would answer it;
- answered by this passage, without naming the passage, its book or its page, and without copying a whole sentence from it.

Reply with JSON only.{reasoning_note} "query" is the question, or null when the passage is turned down. "reason" says in one sentence why the passage passed or was turned down."""

REASONING_NOTE = ' Start with "reasoning": a few sentences of thinking before you decide.'

USER = """Source: {source}
Section: {section}

Passage:
<<<
{text}
>>>"""


# Length caps are part of the answer schema, so servers with constrained decoding stay
# within them and a rambling model still ends its JSON inside the token budget. The
# query cap is far above the word limit: over-long questions reach the counted
# ``too_long`` rule instead of failing the schema.
REASONING_CHARS = 1000
QUERY_CHARS = 300
REASON_CHARS = 300


class QueryAnswer(BaseModel):
    """The gate's verdict and, when the chunk passes, its question."""

    query: str | None = Field(
        max_length=QUERY_CHARS, description="one question within the word limit, or null when turned down"
    )
    reason: str = Field(max_length=REASON_CHARS, description="one sentence: why the passage passed or was turned down")


class QueryAnswerWithReasoning(BaseModel):
    """As :class:`QueryAnswer`, with the model's reasoning first."""

    reasoning: str = Field(max_length=REASONING_CHARS, description="brief thinking before the decision")
    query: str | None = Field(
        max_length=QUERY_CHARS, description="one question within the word limit, or null when turned down"
    )
    reason: str = Field(max_length=REASON_CHARS, description="one sentence: why the passage passed or was turned down")


def query_writer_template(max_words: int, reasoning_field: bool) -> PromptTemplate:
    """The prompt, with the word limit written in (so it is part of the prompt hash)."""
    system = SYSTEM.format(max_words=max_words, reasoning_note=REASONING_NOTE if reasoning_field else "")
    return PromptTemplate(TEMPLATE_ID, system, USER)


def answer_model(reasoning_field: bool) -> type[BaseModel]:
    """The output model: with a leading ``reasoning`` field unless the server returns reasoning itself."""
    return QueryAnswerWithReasoning if reasoning_field else QueryAnswer


def query_requests(sampled: pl.DataFrame, template: PromptTemplate) -> list[LLMRequest]:
    """One request per sampled chunk, keyed by its chunk id."""
    return [
        LLMRequest(
            row["chunk_id"],
            template.render(
                source=row["source"],
                section=" > ".join(row["breadcrumb"] or []) or "(none)",
                text=row["text"],
            ),
        )
        for row in sampled.select("chunk_id", "source", "breadcrumb", "text").iter_rows(named=True)
    ]
