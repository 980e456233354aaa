"""SYNTHETIC annotations for the offline demo: made-up annotators, never clinicians.

The demo has no Label Studio server and no clinicians, so with
``clinician.synthetic_annotators`` set (the sample configuration only; it
cannot be combined with a server URL) the label assets read a Label Studio
JSON export generated here for the current tasks. Each task's choices are
seeded by (seed, task key) alone; annotator 1 picks at random and each other
annotator copies it with probability ``COPY``, else picks afresh, so the
agreement figures are neither perfect nor nil. Every task (``meta``) and
annotation carries ``"synthetic": true``: that mark, not the source's name,
makes every label row synthetic, which the report and the release cards
announce (and a release refuses unless ``clinician.release_synthetic_labels``).
"""

from __future__ import annotations

import hashlib
import json
import random

import polars as pl

from mama_pipeline.clinician._labelling_config import CATEGORIES
from mama_pipeline.judging import GRADES

FIRST_ID = 901  # Label Studio user ids of the made-up annotators: 901, 902, ...
COPY = 0.7
SOURCE = "synthetic:{kind} (made-up annotators, not clinicians)"


def _relevance(rng: random.Random) -> list[dict]:
    on_topic = rng.random() < 0.6
    result = [
        {
            "from_name": "d1_topic",
            "to_name": "chunk",
            "type": "choices",
            "value": {"choices": ["yes" if on_topic else "no"]},
        }
    ]
    if on_topic:
        result += [
            {"from_name": d, "to_name": "chunk", "type": "choices", "value": {"choices": [str(rng.randint(0, 2))]}}
            for d in GRADES
        ]
    return result


def _scope(rng: random.Random) -> list[dict]:
    return [
        {"from_name": "category", "to_name": "item", "type": "choices", "value": {"choices": [rng.choice(CATEGORIES)]}}
    ]


def synthetic_export(tasks: pl.DataFrame, kind: str, annotators: int, seed: int) -> list[dict]:
    """A Label Studio JSON export of ``kind``'s tasks, each annotated by ``annotators`` made-up annotators."""
    make = _relevance if kind == "relevance" else _scope
    out, ann_id = [], 0
    rows = tasks.filter(pl.col("kind") == kind).sort("task_key").select("task_key", "data_json").iter_rows()
    for n, (key, data) in enumerate(rows):
        rng = random.Random(hashlib.sha256(f"{seed}|{key}".encode()).digest())
        first = make(rng)
        annotations = []
        for a in range(annotators):
            ann_id += 1
            result = first if a == 0 or rng.random() < COPY else make(rng)
            annotations.append(
                {
                    "id": ann_id,
                    "completed_by": FIRST_ID + a,
                    "result": result,
                    "was_cancelled": False,
                    "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": "2026-01-01T00:00:00Z",
                    "lead_time": None,
                    "synthetic": True,
                }
            )
        out.append({"id": n + 1, "data": json.loads(data), "annotations": annotations, "meta": {"synthetic": True}})
    return out


def is_synthetic(labels: pl.DataFrame) -> bool:
    """Whether any row says it is synthetic (its annotation or task was marked so), whatever its source is called."""
    return bool(labels["synthetic"].any()) if labels.height else False
