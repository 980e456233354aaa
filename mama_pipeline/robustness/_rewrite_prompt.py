"""The LLM rewrite prompts (telegraphic, code-switched Swahili-English) and the same-information gate.

The rewriter sees only the question; the gate, asked in a second call, sees the
question and one rewrite and decides whether the rewrite asks for the same
information. A rewrite is kept only on the gate's yes.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from mama_pipeline.llm.prompt_template import PromptTemplate

STYLES = {
    "telegraphic": (
        "Rewrite the question the way a busy nurse-midwife types it into a search box on a phone during a shift: "
        "telegraphic, dropping articles, auxiliaries and polite words, keeping every clinical term, number, drug, "
        "dose, timing window (pregnancy, labour, after birth, newborn) and condition of the original. Common "
        "clinical shorthand is fine. Do not add anything the question does not ask."
    ),
    "codeswitch": (
        "Rewrite the question the way a nurse-midwife in Zanzibar or mainland Tanzania types it, mixing Swahili "
        "and English in one sentence (code-switching): Swahili for the everyday words and the grammar, English for "
        "most clinical terms, drug names and numbers, as people do in practice. Keep every clinical term, number, "
        "drug, dose, timing window and condition of the original. Do not add anything the question does not ask, "
        "and do not translate the whole question into Swahili."
    ),
}

REWRITE_SYSTEM = """You help build a search benchmark for midwives and other maternal and newborn health workers. You are given one clinical question.

{style}

Reply with JSON only.{reasoning_note} "rewrite" is the rewritten question, at most {max_words} words."""

REWRITE_USER = """Question:
<<<
{query}
>>>"""

GATE_SYSTEM = """You check a search benchmark for midwives. You are given an original clinical question and a rewrite of it (it may be terse, misspelt, abbreviated, or mix Swahili and English).

Decide whether the rewrite asks for exactly the same information as the original: the same condition, drug or procedure, the same timing window (pregnancy, labour, after birth, newborn), the same numbers and the same kind of answer (a dose, a sign, a threshold, a step...). Style, language mixing and shorthand do not matter. Answer false when the rewrite drops, adds or changes anything a clinician would need to answer it, or when it is not a question a clinician could answer.

Reply with JSON only.{reasoning_note} "same_information" is true or false; "reason" says in one sentence why."""

GATE_USER = """Original question:
<<<
{query}
>>>

Rewrite:
<<<
{rewrite}
>>>"""

REASONING_NOTE = ' Start with "reasoning": a few sentences of thinking before you answer.'
REWRITE_CHARS = 400
REASON_CHARS = 300
REASONING_CHARS = 1000


class Rewrite(BaseModel):
    rewrite: str = Field(max_length=REWRITE_CHARS, description="the rewritten question")


class RewriteWithReasoning(BaseModel):
    reasoning: str = Field(max_length=REASONING_CHARS, description="brief thinking before the rewrite")
    rewrite: str = Field(max_length=REWRITE_CHARS, description="the rewritten question")


class GateVerdict(BaseModel):
    same_information: bool = Field(description="the rewrite asks for the same information as the original")
    reason: str = Field(max_length=REASON_CHARS, description="one sentence: why")


class GateVerdictWithReasoning(BaseModel):
    reasoning: str = Field(max_length=REASONING_CHARS, description="brief thinking before the verdict")
    same_information: bool = Field(description="the rewrite asks for the same information as the original")
    reason: str = Field(max_length=REASON_CHARS, description="one sentence: why")


def rewrite_template(style: str, max_words: int, reasoning_field: bool) -> PromptTemplate:
    system = REWRITE_SYSTEM.format(
        style=STYLES[style], max_words=max_words, reasoning_note=REASONING_NOTE if reasoning_field else ""
    )
    return PromptTemplate(f"query_rewrite_{style}", system, REWRITE_USER)


def gate_template(reasoning_field: bool) -> PromptTemplate:
    return PromptTemplate(
        "rewrite_gate", GATE_SYSTEM.format(reasoning_note=REASONING_NOTE if reasoning_field else ""), GATE_USER
    )


def rewrite_model(reasoning_field: bool) -> type[BaseModel]:
    return RewriteWithReasoning if reasoning_field else Rewrite


def gate_model(reasoning_field: bool) -> type[BaseModel]:
    return GateVerdictWithReasoning if reasoning_field else GateVerdict
