"""The clinicians' majority label per task, with ties listed rather than decided.

A value wins when more than half of the task's usable annotations give it.
Relevance is adjudicated per dimension: D1 over every annotation; D2-D4 over
the annotations that put the pair on topic, then scored with the judge's rules.
A task with a tie on any dimension it needs has no majority label. A task is
``synthetic`` when any annotation it was adjudicated from is.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

from mama_pipeline.judging import GRADES, OFF_TOPIC, score_verdicts
from mama_pipeline.store.table_schema import table_schema

MAJORITY_SCHEMA = table_schema("clinician_validated")


def _majority(values: list[Any]) -> tuple[Any, bool]:
    """(winner, tie): the value given by more than half; tie when none is."""
    if not values:
        return None, True
    value, n = Counter(values).most_common(1)[0]
    return (value, False) if n * 2 > len(values) else (None, True)


def _relevance(rows: list[dict[str, Any]]) -> dict[str, Any]:
    d1, tie = _majority([r["d1_topic"] for r in rows])
    if tie:
        return {"tie": True, "tied_on": "d1_topic"}
    if not d1:
        return {
            "tie": False,
            "tied_on": None,
            **score_verdicts(OFF_TOPIC),
        }
    on_topic = [r for r in rows if r["d1_topic"]]
    grades, tied = {}, []
    for dim in GRADES:
        grades[dim], t = _majority([r[dim] for r in on_topic])
        if t:
            tied.append(dim)
    if tied:
        return {"tie": True, "tied_on": ",".join(tied)}
    label = score_verdicts({"d1_topic": True, **{d: int(v) for d, v in grades.items()}})
    return {"tie": False, "tied_on": None, **label}


def majority_labels(labels: pl.DataFrame, min_annotations: int) -> pl.DataFrame:
    """Per task with at least ``min_annotations`` usable annotations: the majority label, or a listed tie."""
    usable = labels.filter(pl.col("status") == "labelled")
    out = []
    for (key,), group in sorted(usable.group_by("task_key"), key=lambda kv: kv[0][0]):
        rows = group.sort("annotator_id").to_dicts()
        if len(rows) < min_annotations:
            continue
        first = rows[0]
        base = {
            "task_key": key,
            "kind": first["kind"],
            "query_id": first["query_id"],
            "chunk_id": first["chunk_id"],
            "item_id": first["item_id"],
            "annotations": len(rows),
            "annotators": ",".join(r["annotator_id"] for r in rows),
            "synthetic": any(r["synthetic"] for r in rows),
        }
        if first["kind"] == "relevance":
            decided = _relevance(rows)
        else:
            category, tie = _majority([r["category"] for r in rows])
            decided = {"tie": tie, "tied_on": "category" if tie else None, "category": category}
        decided.pop("d3_answered", None)
        decided.pop("structural_violation", None)
        out.append({**base, **decided})
    return pl.DataFrame(out, schema=MAJORITY_SCHEMA, strict=False)
