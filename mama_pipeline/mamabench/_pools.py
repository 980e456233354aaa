"""The nine upstream pools: their track, item type, scoping and required columns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scoping = Literal["prescoped", "classifier", "oss_eval_verdict"]
SetType = Literal["mcq", "open_ended", "open_ended_rubric"]


@dataclass(frozen=True)
class Pool:
    name: str  # settings key, asset and table suffix, item-id prefix
    dataset: str  # upstream dataset as named in the card and in ``source.dataset``
    licence: str  # the upstream licence (a source location may override it)
    track: Literal["mcq", "short_answer", "rubric"]
    set_type: SetType
    scoping: Scoping
    required: tuple[str, ...]  # columns (or record keys) the adapter reads
    id_column: str | None  # upstream id; None: ids are content hashes
    member: tuple[str, str] | None = None  # (column, value) selecting the pool inside a shared file
    classifier_mode: Literal["mcq", "open_ended"] | None = None


_AFRIMED = (
    "sample_id",
    "split",
    "question_type",
    "question",
    "answer_options",
    "correct_answer",
    "answer_rationale",
    "specialty",
    "tier",
    "country",
)
_HEALTHBENCH = ("prompt", "prompt_id", "rubrics", "example_tags")

POOLS: tuple[Pool, ...] = (
    Pool(
        "medmcqa",
        "openlifescienceai/medmcqa",
        "Apache-2.0",
        "mcq",
        "mcq",
        "prescoped",
        ("id", "question", "opa", "opb", "opc", "opd", "cop", "subject_name", "topic_name", "choice_type"),
        "id",
    ),
    Pool(
        "medqa_usmle",
        "GBaker/MedQA-USMLE-4-options",
        "MIT",
        "mcq",
        "mcq",
        "classifier",
        ("question", "answer", "options", "answer_idx", "meta_info"),
        None,
        classifier_mode="mcq",
    ),
    Pool(
        "afrimedqa_mcq",
        "intronhealth/afrimedqa_v2",
        "CC-BY-NC-SA-4.0",
        "mcq",
        "mcq",
        "prescoped",
        _AFRIMED,
        "sample_id",
        member=("question_type", "mcq"),
    ),
    Pool(
        "kenya_vignettes",
        "Kenya clinical vignettes",
        "MIT",
        "short_answer",
        "open_ended",
        "classifier",
        ("StudyID", "User Prompt", "Clinician response"),
        "StudyID",
        classifier_mode="open_ended",
    ),
    Pool(
        "afrimedqa_saq",
        "intronhealth/afrimedqa_v2",
        "CC-BY-NC-SA-4.0",
        "short_answer",
        "open_ended",
        "prescoped",
        _AFRIMED,
        "sample_id",
        member=("question_type", "saq"),
    ),
    Pool(
        "whb",
        "TheLumos/WHB_subset",
        "CC-BY-SA-4.0",
        "short_answer",
        "open_ended",
        "prescoped",
        ("expert_prompt", "justification"),
        None,
    ),
    Pool(
        "healthbench_oss_eval",
        "openai/healthbench (oss_eval)",
        "MIT",
        "rubric",
        "open_ended_rubric",
        "classifier",
        _HEALTHBENCH,
        "prompt_id",
        classifier_mode="open_ended",
    ),
    Pool(
        "healthbench_consensus",
        "openai/healthbench (consensus)",
        "MIT",
        "rubric",
        "open_ended_rubric",
        "oss_eval_verdict",
        _HEALTHBENCH,
        "prompt_id",
    ),
    Pool(
        "healthbench_hard",
        "openai/healthbench (hard)",
        "MIT",
        "rubric",
        "open_ended_rubric",
        "classifier",
        _HEALTHBENCH,
        "prompt_id",
        classifier_mode="open_ended",
    ),
)

POOL_BY_NAME = {p.name: p for p in POOLS}
