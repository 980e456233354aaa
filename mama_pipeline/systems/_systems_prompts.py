"""What an answering system is asked, per track, and the short-answer grader's prompt.

Every template is a :class:`PromptTemplate`, so its hash (in the LLM cache key
and in the results) changes whenever its text does. A system's own system
prompt is the template's system message.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from mama_pipeline.llm.prompt_template import PromptTemplate

LETTERS = "ABCDEFGHIJ"

CONTEXT_BLOCK = (
    "Excerpts from clinical guidelines retrieved for this question, each with its chunk id. "
    "Use them where they are relevant.\n\n{chunks}\n\n---\n\n"
)

MCQ_JSON_USER = (
    "{context}Answer the following multiple choice question with the letter of the single best option.\n\n"
    "{question}\n\n{options}\n\n"
    'Reply with JSON only: {{"answer": "<one of {letters}>"}}.'
)

# openai simple-evals' multiple-choice query template (mmlu_eval), letters generalised to the item's
MCQ_TEXT_USER = (
    "{context}Answer the following multiple choice question. The last line of your response should be of "
    "the following format: 'Answer: $LETTER' (without quotes) where LETTER is one of {letters}. "
    "Think step by step before answering.\n\n{question}\n\n{options}"
)

OPEN_USER = "{context}{question}"


def answer_template(track: str, system_prompt: str, mcq_output: str = "json_schema") -> PromptTemplate:
    """The template a system answers one track with (``question`` is the last user turn for rubric items)."""
    if track == "mcq":
        user = MCQ_JSON_USER if mcq_output == "json_schema" else MCQ_TEXT_USER
        return PromptTemplate(id=f"systems.answer.mcq.{mcq_output}", system=system_prompt, user=user)
    if track in ("short_answer", "rubric"):
        return PromptTemplate(id=f"systems.answer.{track}", system=system_prompt, user=OPEN_USER)
    raise ValueError(f"unknown track {track!r}")


class LetterAnswer(BaseModel):
    """An mcq answer under JSON-schema output: one letter (checked against the item's options later)."""

    answer: Literal["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"]


# The extraction rule of simple-evals (``ANSWER_PATTERN_MULTICHOICE``, first match, after removing
# markdown bold), with the letter class limited to the item's letters.
ANSWER_PATTERN = r"(?i)Answer[ \t]*:[ \t]*\$?([{letters}])\$?"


def extract_letter(text: str, letters: str) -> str | None:
    """The letter a free-text mcq answer gives ('Answer: X', first match), or None when it gives none."""
    match = re.search(ANSWER_PATTERN.format(letters=letters), text.replace("**", ""))
    return match.group(1).upper() if match else None


SHORT_ANSWER_GRADER_PROMPT = PromptTemplate(
    id="systems.short_answer_grader",
    system=(
        "You grade answers to clinical questions against a reference answer written by a clinician. "
        "You are strict, fair and brief, and you reply with JSON only."
    ),
    user=(
        "<question>\n{question}\n</question>\n\n"
        "<reference_answer>\n{reference}\n</reference_answer>\n\n"
        "<answer_to_grade>\n{answer}\n</answer_to_grade>\n\n"
        "Compare the answer with the reference on clinical substance, not wording or length.\n"
        "- correct: it reaches the reference's key conclusions (diagnosis, management, drugs and doses, "
        "referral) and says nothing clinically wrong or unsafe.\n"
        "- partially_correct: it gets some key points right but misses others, or adds a minor error.\n"
        "- incorrect: it misses the key points, contradicts the reference, or would be unsafe to follow.\n\n"
        "First reason in a few sentences, then give the grade. "
        'Reply with a JSON object: {{"reasoning": "<why>", "grade": "correct" or "partially_correct" '
        'or "incorrect"}}.'
    ),
)

SHORT_ANSWER_SCORES = {"correct": 1.0, "partially_correct": 0.5, "incorrect": 0.0}


class ShortAnswerGrade(BaseModel):
    reasoning: str  # first: the grader reasons before it commits to a grade
    grade: Literal["correct", "partially_correct", "incorrect"]
