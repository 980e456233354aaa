"""Small mamabench items, criteria, chunks and a harness report for the systems tests.

Directives for the fake LLM server ride inside the text each request quotes: a
``[[answer:{...}]]`` in a reference answer or criterion fixes the grader's verdict,
a ``[[fault:...]]`` in an mcq question injects a transport or parse fault.
"""

from __future__ import annotations

import json

import polars as pl

from mama_pipeline.calibration._rater_agreement import REPORT_SCHEMA
from mama_pipeline.mamabench._schema import criterion_id


def mcq(
    item_id: str,
    question: str,
    choices: list[str],
    answer_index: int,
    pool: str = "medmcqa",
    category: str | None = None,
) -> dict:
    item = {
        "id": item_id,
        "set_type": "mcq",
        "question": question,
        "choices": choices,
        "answer_index": answer_index,
        "answer": choices[answer_index],
    }
    return {"item_id": item_id, "pool": pool, "set_type": "mcq", "category": category, "item_json": json.dumps(item)}


def short(
    item_id: str, question: str, reference: str, pool: str = "kenya_vignettes", category: str | None = "MATERNAL"
) -> dict:
    item = {"id": item_id, "set_type": "open_ended", "question": question, "answer": reference}
    return {
        "item_id": item_id,
        "pool": pool,
        "set_type": "open_ended",
        "category": category,
        "item_json": json.dumps(item),
    }


def rubric(
    item_id: str,
    user: str,
    criteria: list[tuple[str, int]],
    category: str = "NEONATAL",
    pool: str = "healthbench_oss_eval",
) -> dict:
    refs = [{"criterion_id": criterion_id(text, []), "points": points} for text, points in criteria]
    item = {
        "id": item_id,
        "set_type": "open_ended_rubric",
        "question": [{"role": "user", "content": user}],
        "rubrics": refs,
    }
    return {
        "item_id": item_id,
        "pool": pool,
        "set_type": "open_ended_rubric",
        "category": category,
        "item_json": json.dumps(item),
    }


def items_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "item_id": pl.String,
            "pool": pl.String,
            "set_type": pl.String,
            "category": pl.String,
            "item_json": pl.String,
        },
    )


def criteria_frame(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {"criterion_id": [criterion_id(t, []) for t in texts], "criterion": texts, "tags": [[] for _ in texts]},
        schema={"criterion_id": pl.String, "criterion": pl.String, "tags": pl.List(pl.String)},
    )


def verdict(met: bool) -> str:
    return f'[[answer:{{"explanation": "fixed", "criteria_met": {json.dumps(met)}}}]]'


def grade(label: str) -> str:
    return f'[[answer:{{"reasoning": "fixed", "grade": "{label}"}}]]'


CHUNK_TEXTS = [
    "Give oxytocin 10 IU intramuscularly within one minute of birth to prevent postpartum haemorrhage.",
    "Magnesium sulfate is the drug of choice to prevent and treat eclamptic seizures.",
    "Keep the newborn warm: dry the baby, skin-to-skin contact with the mother, cover the head.",
    "Exclusive breastfeeding is recommended for the first six months of life.",
]


def chunks_frame() -> pl.DataFrame:
    import hashlib

    ids = [hashlib.sha256(t.encode()).hexdigest()[:16] for t in CHUNK_TEXTS]
    n = len(ids)
    return pl.DataFrame(
        {
            "chunk_id": ids,
            "source": ["who"] * n,
            "page": list(range(1, n + 1)),
            "breadcrumb": [["Care"]] * n,
            "text": CHUNK_TEXTS,
            "given_cid": ids,
            "line": list(range(1, n + 1)),
            "ordinal": list(range(n)),
            "corpus_version": ["v-test"] * n,
        }
    )


def harness_frame() -> pl.DataFrame:
    base = {k: None for k in REPORT_SCHEMA}
    rows = []
    for category, f1 in (("ALL", 0.71), ("NEONATAL", 0.64), ("MATERNAL", 0.75)):
        rows.append(
            {
                **base,
                "rater": "judge",
                "rater_kind": "judge",
                "scope_category": category,
                "rows": 30,
                "pairs": 60,
                "macro_f1": f1,
                "balanced_accuracy": 0.7,
                "agree_on_met": 0.8,
                "agree_on_not_met": 0.6,
                "met_pairs": 40,
                "not_met_pairs": 20,
                "consensus_rows": 10,
            }
        )
    return pl.DataFrame(rows, schema=REPORT_SCHEMA)
