"""The scope classifier's prompt, its answer models and the rendering of items into it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.mamabench._schema import Category

SYSTEM = """\
You sort items of a medical question benchmark by clinical scope. The benchmark \
serves nurse-midwives, so it keeps maternal, newborn, child and reproductive \
health. Give every item exactly one category.

Categories:
- MATERNAL: pregnancy and its care: conception onwards, antenatal care, labour and \
birth, the puerperium and the first postpartum year, including postpartum mental \
health, lactation problems of the mother and every complication of these.
- NEONATAL: the baby from birth to 28 days of age: resuscitation at birth, \
prematurity and low birth weight, newborn jaundice, sepsis and feeding, and \
congenital conditions as they present in that period.
- CHILD_HEALTH: children and adolescents older than 28 days and younger than 18 \
years: growth and development, immunisation, nutrition, and illnesses of childhood.
- SEXUAL_AND_REPRODUCTIVE_HEALTH: reproductive and sexual health outside pregnancy: \
contraception, infertility, menstruation, menopause, sexually transmitted \
infections, gender-based and sexual violence, cervical screening, and all \
gynaecological conditions.
- NONE: everything else. NONE is the default; pick a positive category only when it \
clearly applies.

Decide by the primary clinical concept the item is about, not by who the patient \
happens to be. A concept unrelated to the categories stays NONE even when the \
patient is pregnant, a newborn, a child or a woman: setting a broken wrist in a \
pregnant patient is NONE. When the life stage is itself the concept, the category \
follows it: depression after childbirth is MATERNAL.

If two positive categories fit equally well, take the one listed first in this \
order: MATERNAL, NEONATAL, CHILD_HEALTH, SEXUAL_AND_REPRODUCTIVE_HEALTH.

Multiple-choice items: read the answer options together with the stem; they show \
which concept the question is really testing.

Conversations: classify the health question the conversation is about. Turns are \
labelled by speaker. Disregard how the writer introduces themselves (their \
profession, years of experience, workplace or country): that describes the \
asker, not the clinical concept.

Answer in JSON following the schema you are given. The rationale is one short \
sentence that names the primary concept."""

USER = """\
Item type: {item_type}

{item}"""

SCOPE_TEMPLATE = PromptTemplate(id="scope_classifier", system=SYSTEM, user=USER)

ITEM_TYPES = {
    "mcq": "multiple-choice question (stem and options)",
    "open_ended": "conversation with a health assistant (turns labelled by speaker)",
}


# Length caps are advertised in the schema, so servers with constrained decoding end
# the strings in time; answers are not rejected for exceeding them.
_RATIONALE = Field(description="one sentence naming the primary clinical concept", json_schema_extra={"maxLength": 200})
_REASONING = Field(
    description="brief step-by-step thinking about the primary clinical concept", json_schema_extra={"maxLength": 600}
)


class ScopeVerdict(BaseModel):
    """The answer when the server returns the model's reasoning separately."""

    category: Category
    rationale: str = _RATIONALE


class ScopeVerdictWithReasoning(BaseModel):
    """The answer with the model's reasoning first, before its verdict."""

    reasoning: str = _REASONING
    category: Category
    rationale: str = _RATIONALE


def verdict_model(reasoning: Literal["json_field", "server"]) -> type[BaseModel]:
    return ScopeVerdictWithReasoning if reasoning == "json_field" else ScopeVerdict


def render_mcq(stem: str, choices: list[str]) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    lines = [f"Question:\n{stem}", "", "Options:"]
    lines += [f"{letters[i]}. {c}" for i, c in enumerate(choices)]
    return "\n".join(lines)


def render_conversation(turns: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"[{role.upper()}]\n{content.strip()}" for role, content in turns)


def render_messages(mode: str, item: str) -> list[dict[str, str]]:
    return SCOPE_TEMPLATE.render(item_type=ITEM_TYPES[mode], item=item)
