"""A small judged sample with hand-worked clinician labels, and stand-ins for the clinician group's inputs.

Four judged pairs (the judge's verdicts below) and three classified mamabench
items; two clinicians label them as in ``RELEVANCE_LABELS`` and ``SCOPE_LABELS``.
The expected agreement figures in the tests were worked out by hand from these.
"""

from __future__ import annotations

import json

import dagster as dg
import polars as pl

from mama_pipeline.clinician import definitions as clinician
from mama_pipeline.judging._label_score import score_verdicts
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline_tests.stand_ins import as_corpus_chunks, as_generated_queries

PAIRS = {  # (query_id, chunk_id): judge's (d1, d2, d3, d4)
    ("q_00001", "a" * 16): (True, 2, 2, 2),  # score 6
    ("q_00002", "b" * 16): (True, 1, 1, 1),  # score 3
    ("q_00003", "c" * 16): (False, 0, 0, 0),  # score 0
    ("q_00004", "d" * 16): (True, 2, 1, 0),  # score 3
}
RELEVANCE_LABELS = {  # annotator -> per pair in PAIRS order: (d1, d2, d3, d4)
    "one": [(True, 2, 2, 2), (True, 1, 1, 0), (False, None, None, None), (True, 2, 1, 1)],  # 6, 2, 0, 4
    "two": [(True, 2, 2, 1), (True, 1, 1, 0), (True, 1, 0, 0), (True, 2, 1, 1)],  # 5, 2, 1, 4
}
ITEMS = {"mb-1": "MATERNAL", "mb-2": "NONE", "mb-3": "NEONATAL"}  # item -> classifier's category
SCOPE_LABELS = {"one": ["MATERNAL", "NONE", "CHILD_HEALTH"], "two": ["MATERNAL", "MATERNAL", "CHILD_HEALTH"]}
QUERY_TEXT = "What loading dose of magnesium sulfate is given for severe pre-eclampsia?"
CHUNK_TEXT = (
    "Severe pre-eclampsia: give magnesium sulfate 4 g IV slowly over 5 minutes, then 10 g deep IM. "
    "Check the respiratory rate, knee reflexes and urine output before each repeat dose."
)


def judgments_frame() -> pl.DataFrame:
    rows = []
    for i, ((q, c), (d1, d2, d3, d4)) in enumerate(PAIRS.items()):
        label = score_verdicts({"d1_topic": d1, "d2_meaningful": d2, "d3_actionable": d3, "d4_density": d4})
        rows.append(
            {
                "query_id": q,
                "chunk_id": c,
                "reused": False,
                "judge_model": "fake-judge",
                "prompt_hash": "0" * 16,
                **label,
                "reasoning": None,
                "judge_endpoint": "http://fake",
                "corpus_version": "v-test",
                "cache_key": f"k{i}",
                "tier": ["very_high", "high"][i % 2],
            }
        )
    return pl.DataFrame(rows).with_columns(
        pl.col("d2_meaningful", "d3_actionable", "d4_density", "d3_answered", "score").cast(pl.Int8)
    )


def queries_frame() -> pl.DataFrame:
    ids = sorted({q for q, _ in PAIRS})
    df = pl.DataFrame(
        {
            "query_id": ids,
            "query_text": [QUERY_TEXT] + [f"Question {q}?" for q in ids[1:]],
            "tier": ["very_high", "high", "very_high", "high"],
        }
    )
    return as_generated_queries(df)


def chunks_frame() -> pl.DataFrame:
    ids = [c for _, c in PAIRS]
    return as_corpus_chunks(
        pl.DataFrame(
            {
                "chunk_id": ids,
                "text": [CHUNK_TEXT] + [f"Passage {c}." for c in ids[1:]],
                "source": "hesperian-a-book-for-midwives",
            }
        )
    )


def chunks_of(ids: list[str]) -> pl.DataFrame:
    """The fixture's chunks of these ids, as the clinician_tasks asset reads them from the store."""
    return chunks_frame().filter(pl.col("chunk_id").is_in(ids))


def verdicts_frame() -> pl.DataFrame:
    n = len(ITEMS)
    return pl.DataFrame(
        {
            "item_id": list(ITEMS),
            "pool": ["medqa_usmle"] * n,
            "via": ["classifier"] * n,
            "status": ["ok"] * n,
            "category": list(ITEMS.values()),
            "rationale": ["r"] * n,
            "reasoning": [None] * n,
            "error": [None] * n,
            "from_cache": [False] * n,
            "model": ["fake"] * n,
            "endpoint": ["http://fake"] * n,
            "prompt_id": [None] * n,
            "prompt_hash": ["0" * 16] * n,
            "source_item_id": [None] * n,
        },
        schema_overrides={
            "reasoning": pl.String,
            "error": pl.String,
            "prompt_id": pl.String,
            "source_item_id": pl.String,
        },
    )


def adapted_frame() -> pl.DataFrame:
    n = len(ITEMS)
    return pl.DataFrame(
        {
            "pool": ["medqa_usmle"] * n,
            "origin": ["f"] * n,
            "upstream_index": list(range(n)),
            "upstream_id": [None] * n,
            "item_id": list(ITEMS),
            "status": ["pending"] * n,
            "reason": [None] * n,
            "detail": [None] * n,
            "in_prescope": [None] * n,
            "cosmetic_defects": [[]] * n,
            "scope_mode": ["mcq"] * n,
            "scope_input": [f"Question:\nItem {i} stem\n\nOptions:\nA. x\nB. y" for i in ITEMS],
            "join_key": [None] * n,
            "prior_category": [None] * n,
            "item_json": ["{}"] * n,
            "criteria_json": [None] * n,
        },
        schema_overrides={
            "upstream_id": pl.String,
            "reason": pl.String,
            "detail": pl.String,
            "in_prescope": pl.Boolean,
            "cosmetic_defects": pl.List(pl.String),
            "join_key": pl.String,
            "prior_category": pl.String,
            "criteria_json": pl.String,
        },
    )


@dg.asset(key="judgments")
def judgments() -> pl.DataFrame:
    return judgments_frame()


@dg.asset(key="pooled_pairs")
def pool() -> pl.DataFrame:
    from mama_pipeline.retrieval._pooling import POOL_SCHEMA

    pairs = judgments_frame().select("query_id", "chunk_id")
    return pairs.with_columns(retrievers=pl.lit(["bm25"]), best_rank=1, is_seed=False, pool_size=1).cast(POOL_SCHEMA)


@dg.asset(key="generated_queries")
def queries() -> pl.DataFrame:
    return queries_frame()


@dg.asset(key="corpus_chunks")
def chunks() -> pl.DataFrame:
    return chunks_frame()


@dg.asset(key="mamabench_scope_verdicts")
def verdicts() -> pl.DataFrame:
    return verdicts_frame()


@dg.asset(key="mamabench_adapted")
def adapted() -> pl.DataFrame:
    return adapted_frame()


UPSTREAM = [judgments, pool, queries, chunks, verdicts, adapted]
CLINICIAN = clinician.build_defs(load_settings())  # the bundled sample unless MAMA_CONFIG names another
ALL = [*CLINICIAN.assets, *CLINICIAN.asset_checks, *UPSTREAM]


def defs(config_path: str) -> dg.Definitions:
    area = clinician.build_defs(load_settings(config_path))
    return dg.Definitions(
        assets=[*area.assets, *UPSTREAM],
        asset_checks=area.asset_checks,
        sensors=area.sensors,
        resources=shared_resources(config_path),
    )


def relevance_result(label: tuple) -> list[dict]:
    """A Label Studio annotation result for (d1, d2, d3, d4)."""
    d1, *grades = label
    out = [
        {"from_name": "d1_topic", "to_name": "chunk", "type": "choices", "value": {"choices": ["yes" if d1 else "no"]}}
    ]
    for name, g in zip(("d2_meaningful", "d3_actionable", "d4_density"), grades):
        if g is not None:
            out.append({"from_name": name, "to_name": "chunk", "type": "choices", "value": {"choices": [str(g)]}})
    return out


def scope_result(category: str) -> list[dict]:
    return [{"from_name": "category", "to_name": "item", "type": "choices", "value": {"choices": [category]}}]


def export_file_tasks(kind: str, annotator_ids: dict[str, int]) -> list[dict]:
    """A Label Studio JSON export of the fixture's tasks with both clinicians' annotations."""
    tasks, ann_id = [], 0
    keys = [f"relevance:{q}:{c}" for q, c in PAIRS] if kind == "relevance" else [f"scope:{i}" for i in ITEMS]
    for t, key in enumerate(keys):
        anns = []
        for who, uid in annotator_ids.items():
            ann_id += 1
            result = (
                relevance_result(RELEVANCE_LABELS[who][t])
                if kind == "relevance"
                else scope_result(SCOPE_LABELS[who][t])
            )
            anns.append(
                {
                    "id": ann_id,
                    "completed_by": uid,
                    "result": result,
                    "was_cancelled": False,
                    "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": f"2026-01-01T00:00:{ann_id:02d}Z",
                    "lead_time": 12.5,
                }
            )
        data = {"task_key": key}
        if kind == "relevance":
            data.update(query_id=key.split(":")[1], chunk_id=key.split(":")[2])
        else:
            data.update(item_id=key.split(":")[1])
        tasks.append({"id": t + 1, "data": data, "annotations": anns})
    return tasks


def write_export(path, kind: str) -> None:
    path.write_text(json.dumps(export_file_tasks(kind, {"one": 11, "two": 12})))
