"""The canonical mamabench item, validated by pydantic and exported as JSON Schema."""

from __future__ import annotations

import enum
import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = "1.0.0"


class Category(str, enum.Enum):
    MATERNAL = "MATERNAL"
    NEONATAL = "NEONATAL"
    CHILD_HEALTH = "CHILD_HEALTH"
    SEXUAL_AND_REPRODUCTIVE_HEALTH = "SEXUAL_AND_REPRODUCTIVE_HEALTH"
    NONE = "NONE"


IN_SCOPE = tuple(c.value for c in Category if c is not Category.NONE)
CATEGORY_ALIASES = {"SRH": Category.SEXUAL_AND_REPRODUCTIVE_HEALTH.value}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChatMessage(_Strict):
    role: Literal["system", "developer", "user", "assistant"]
    content: str


class RubricRef(_Strict):
    criterion_id: str
    points: int = Field(ge=-10, le=10)

    @field_validator("points")
    @classmethod
    def _nonzero(cls, v: int) -> int:
        if v == 0:
            raise ValueError("rubric points must be non-zero")
        return v


class Criterion(_Strict):
    """One row of the criteria side table."""

    criterion_id: str
    criterion: str
    tags: list[str]


class SourceMetadata(_Strict):
    category: Category | None = Field(None, description="scope verdict; null for pre-scoped pools")
    scoped_by: Literal["prescoped", "classifier", "oss_eval_verdict"]
    pool: str
    subset: str = Field(description="the upstream file the row came from")
    upstream_index: int = Field(description="0-based data row inside that file")
    tags: list[str] = Field(default_factory=list, description="upstream labels as 'key:value'")
    cosmetic_defects: list[str] = Field(default_factory=list)


class SourceRef(_Strict):
    dataset: str
    id: str
    metadata: SourceMetadata


class CanonicalItem(_Strict):
    id: str
    schema_version: Literal["1.0.0"] = SCHEMA_VERSION
    set_type: Literal["mcq", "open_ended", "open_ended_rubric"]
    question: str | list[ChatMessage]
    choices: list[str] | None = None
    answer_index: int | None = None
    answer: str | None = None
    rubrics: list[RubricRef] | None = None
    source: SourceRef

    @model_validator(mode="after")
    def _shape(self) -> CanonicalItem:
        if self.set_type == "mcq":
            if not self.choices or self.answer_index is None or not isinstance(self.question, str):
                raise ValueError("mcq items need a string question, choices and answer_index")
            if not 0 <= self.answer_index < len(self.choices) or self.answer != self.choices[self.answer_index]:
                raise ValueError("mcq answer must equal choices[answer_index]")
        elif self.set_type == "open_ended":
            if not isinstance(self.question, str) or not self.answer or self.choices or self.rubrics:
                raise ValueError("open_ended items need a string question and a reference answer only")
        else:
            if not isinstance(self.question, list) or not self.question or self.question[-1].role != "user":
                raise ValueError("rubric items need a conversation ending in a user turn")
            if not self.rubrics or self.choices:
                raise ValueError("rubric items need rubrics and no choices")
        return self


def item_json_schema() -> dict[str, Any]:
    schema = CanonicalItem.model_json_schema()
    schema["$id"] = f"https://mamabench/schema/canonical_item-{SCHEMA_VERSION}.json"
    return schema


def criterion_id(text: str, tags: list[str]) -> str:
    """Stable id of a rubric criterion: a hash of its text and tags."""
    payload = json.dumps([text, sorted(tags)], ensure_ascii=False)
    return "c_" + hashlib.sha256(payload.encode()).hexdigest()[:16]


def content_id(*parts: Any) -> str:
    """A stable short hash for upstream rows without an id."""
    payload = json.dumps(parts, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
