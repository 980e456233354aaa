"""The candidate rubric judge: one conversation, its final answer, one criterion -> met or not.

Requests go through the shared LLM client (stage ``rubric_judge``). A call that
fails after the client's retries stays in the label table with its status and
error and a null ``criteria_met``; it never becomes a label.
"""

from __future__ import annotations

import hashlib

import polars as pl
from pydantic import BaseModel

from mama_pipeline.llm.client import LLMRequest, RunReport
from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.store.table_schema import table_schema

STAGE = "rubric_judge"

RUBRIC_JUDGE_PROMPT = PromptTemplate(
    id="calibration.rubric_judge",
    system=(
        "You grade one answer in a health conversation against one criterion written by "
        "physicians. You are strict, literal and brief, and you reply with JSON only."
    ),
    user=(
        "Below is a conversation between a user and an AI assistant. The assistant's final "
        "message is the answer you grade.\n\n"
        "<conversation>\n{conversation}\n</conversation>\n\n"
        "<criterion>\n{criterion}\n</criterion>\n\n"
        "Decide whether the assistant's final message meets the criterion. Grade only that "
        "message; earlier turns are context.\n"
        "- A criterion describing a good behaviour is met when the message shows it.\n"
        "- A criterion describing a bad behaviour (an error, an omission, a harmful "
        "suggestion) is met when the message DOES show that behaviour. Do not invert it: "
        "its penalty is applied elsewhere.\n"
        "- A criterion with several requirements or steps is met only when every one holds.\n"
        "- Examples introduced by 'such as' or 'for example' illustrate; the message need "
        "not cover each one.\n\n"
        'Reply with a JSON object: {{"explanation": "<a few sentences on why>", '
        '"criteria_met": true or false}}.'
    ),
)


class RubricVerdict(BaseModel):
    explanation: str
    criteria_met: bool


LABEL_SCHEMA = table_schema("calibration_judge_labels")


def sample_rows(side_file: pl.DataFrame, size: int, seed: int) -> pl.DataFrame:
    """A seeded sample of side-file rows (all when ``size`` is 0 or covers them).

    Rows are ordered by a hash of (seed, upstream_line), so the sample is stable
    and a larger size extends a smaller one.
    """
    order = [hashlib.sha256(f"{seed}:{line}".encode()).hexdigest() for line in side_file["upstream_line"].to_list()]
    ranked = side_file.with_columns(pl.Series("_order", order, dtype=pl.String)).sort("_order")
    if size:
        ranked = ranked.head(size)
    return ranked.drop("_order").sort("upstream_line")


def render_conversation(prompt: list[dict[str, str]], completion: str) -> str:
    turns = [*prompt, {"role": "assistant", "content": completion}]
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in turns)


def judge_requests(rows: pl.DataFrame) -> list[LLMRequest]:
    return [
        LLMRequest(
            item_id=f"meta-line-{line}",
            messages=RUBRIC_JUDGE_PROMPT.render(conversation=render_conversation(prompt, completion), criterion=rubric),
        )
        for line, prompt, completion, rubric in rows.select(
            "upstream_line", "prompt", "completion", "rubric"
        ).iter_rows()
    ]


def judge_labels(rows: pl.DataFrame, report: RunReport) -> pl.DataFrame:
    """One label row per judged row, in the order asked; failures keep a null label."""
    if len(report.results) != rows.height:
        raise ValueError(f"{len(report.results)} judge results for {rows.height} rows")
    records = []
    for row, res in zip(rows.iter_rows(named=True), report.results):
        value = res.value if res.ok else None
        records.append(
            {
                "upstream_line": row["upstream_line"],
                "prompt_id": row["prompt_id"],
                "completion_id": row["completion_id"],
                "scope_category": row["scope_category"],
                "status": res.status,
                "criteria_met": None if value is None else value["criteria_met"],
                "explanation": None if value is None else value["explanation"],
                "error": res.error,
            }
        )
    return pl.DataFrame(records, schema=LABEL_SCHEMA)


def judged_rows(side_file: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Side-file rows the judge answered, with its label; failed calls are left out."""
    ok = labels.filter(pl.col("status") == "ok").select("upstream_line", "criteria_met")
    return side_file.join(ok, on="upstream_line", how="inner").sort("upstream_line")
