"""Labelling configs, the stratified sample and the reading of Label Studio exports."""

import json
import xml.etree.ElementTree as ET

import polars as pl
import pytest

from mama_pipeline.clinician._adjudication import majority_labels
from mama_pipeline.clinician._annotations import ExportError, latest_per_annotator, parse_export, read_export_file
from mama_pipeline.clinician._labelling_config import (
    CATEGORIES,
    DIMENSIONS,
    relevance_config,
    rubric_definitions,
    scope_config,
    scope_definitions,
)
from mama_pipeline.clinician._projects import annotations_fingerprint
from mama_pipeline.clinician._tasks import TASK_DATA_KEYS, relevance_tasks, scope_tasks
from mama_pipeline.common.strata import round_robin_sample
from mama_pipeline.judging import _rubric as rubric
from mama_pipeline.mamabench import _scope_prompt as scope_prompt
from mama_pipeline_tests.clinician import fixtures as fx


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_definitions_are_the_judges_own_text():
    defs = rubric_definitions()
    assert list(defs) == list(DIMENSIONS)
    for lines in defs.values():
        for line in lines:
            assert _flat(line) in _flat(rubric.SYSTEM)
    assert defs["d3_actionable"][-1].startswith("Guidance presupposes content")
    cats, rules = scope_definitions()
    assert list(cats) == list(CATEGORIES)
    for text in [*cats.values(), *rules]:
        assert text in _flat(scope_prompt.SYSTEM)
    assert any("broken wrist" in r for r in rules)


def test_configs_are_xml_with_every_dimension_and_category_beside_the_data():
    rel = ET.fromstring(relevance_config())
    choices = {c.get("name"): [x.get("value") for x in c] for c in rel.iter("Choices")}
    assert choices == {"d1_topic": ["yes", "no"], **{d: ["0", "1", "2"] for d in DIMENSIONS[1:]}}
    texts = {t.get("name"): t.get("value") for t in rel.iter("Text")}
    assert texts == {"query": "$query", "where": "$where", "chunk": "$chunk"}
    headers = " ".join(h.get("value") for h in rel.iter("Header"))
    assert all(_flat(line) in headers for lines in rubric_definitions().values() for line in lines)
    row = rel[0]  # one flex row: data column, then rubric column
    assert "display:flex" in row.get("style") and len(row) == 2
    assert [t.get("name") for t in row[0].iter("Text")] == ["query", "where", "chunk"]
    assert [c.get("name") for c in row[1].iter("Choices")] == list(DIMENSIONS)
    scope = ET.fromstring(scope_config())
    assert [x.get("value") for x in next(scope.iter("Choices"))] == list(CATEGORIES)


def test_relevance_sample_is_seeded_stratified_and_carries_no_llm_label():
    tasks = relevance_tasks(fx.judgments_frame(), fx.queries_frame(), fx.chunks_of, 3, 7, 3, 5)
    again = relevance_tasks(fx.judgments_frame(), fx.queries_frame(), fx.chunks_of, 3, 7, 3, 5)
    assert tasks.equals(again) and tasks.height == 3
    assert tasks["stratum"].n_unique() == 3  # one pair from each stratum before a second from any
    for data in tasks["data_json"]:
        d = json.loads(data)
        assert tuple(sorted(d)) == tuple(sorted(TASK_DATA_KEYS["relevance"]))
        assert not {"score", "d1_topic", "band", "tier"} & set(d)
    first = json.loads(tasks.filter(pl.col("query_id") == "q_00001")["data_json"][0])
    assert first["query"] == fx.QUERY_TEXT and first["chunk"] == fx.CHUNK_TEXT
    assert first["where"] == "hesperian-a-book-for-midwives, page 1"


def test_scope_sample_covers_every_category_including_none():
    verdicts = pl.DataFrame(
        {
            "item_id": [f"i{i}" for i in range(12)],
            "pool": "p",
            "via": "classifier",
            "status": ["ok"] * 11 + ["parse_failed"],
            "category": ["NONE"] * 8 + ["MATERNAL", "NEONATAL", "NEONATAL", None],
        }
    )
    adapted = pl.DataFrame({"item_id": [f"i{i}" for i in range(12)], "scope_input": "stem"})
    tasks = scope_tasks(verdicts, adapted, 4, 1)
    assert sorted(tasks["stratum"]) == ["MATERNAL", "NEONATAL", "NEONATAL", "NONE"]
    assert set(tasks["stratum"]) == {"MATERNAL", "NEONATAL", "NONE"}
    assert "i11" not in tasks["item_id"].to_list()  # failed verdicts are not sampled
    df = pl.DataFrame({"k": [str(i) for i in range(20)], "s": ["a"] * 10 + ["b"] * 10})
    before = round_robin_sample(df, ["s"], ["k"], 4, 3).filter(pl.col("s") == "a")
    grown = pl.concat([df, pl.DataFrame({"k": ["x1", "x2"], "s": ["b", "b"]})])
    assert (
        round_robin_sample(grown, ["s"], ["k"], 4, 3).filter(pl.col("s") == "a").equals(before)
    )  # strata seeded alone


def test_export_rows_statuses_and_latest_per_annotator():
    tasks = fx.export_file_tasks("relevance", {"one": 11, "two": 12})
    tasks[0]["annotations"].append(
        {
            "id": 99,
            "completed_by": {"id": 11, "email": "x@y"},
            "was_cancelled": False,
            "updated_at": "2026-02-01T00:00:00Z",
            "result": fx.relevance_result((True, 1, 1, 1)),
        }
    )
    tasks[1]["annotations"][0]["was_cancelled"] = True
    tasks[2]["annotations"][1]["result"] = fx.relevance_result((True, 1, None, 0))
    rows = parse_export(tasks, "export.json")
    labels, superseded = latest_per_annotator(rows)
    assert superseded == 1 and labels.height == 8
    latest = labels.filter((pl.col("annotator_id") == "11") & (pl.col("query_id") == "q_00001"))
    assert latest["annotation_id"].to_list() == [99] and latest["score"].to_list() == [3]
    assert labels.filter(pl.col("status") == "skipped").height == 1
    invalid = labels.filter(pl.col("status") == "invalid")
    assert invalid["problem"].to_list() == ["D1 is yes but d3_actionable not answered"]
    off = labels.filter((pl.col("query_id") == "q_00003") & (pl.col("annotator_id") == "11")).row(0, named=True)
    assert (off["d1_topic"], off["d2_meaningful"], off["score"]) == (False, None, 0)


def test_structural_rule_and_bad_exports(tmp_path):
    tasks = fx.export_file_tasks("relevance", {"one": 1})
    tasks[0]["annotations"][0]["result"] = fx.relevance_result((True, 0, 2, 1))
    row = parse_export(tasks, "e.json").row(0, named=True)
    assert (row["structural_violation"], row["d3_actionable"], row["d3_answered"], row["score"]) == (True, 0, 2, 1)
    with pytest.raises(ExportError, match=r"e\.json: a Label Studio JSON export is a list"):
        parse_export({"tasks": []}, "e.json")
    bad = fx.export_file_tasks("scope", {"one": 1})
    bad[1]["data"] = {"text": "no key"}
    with pytest.raises(ExportError, match=r"e\.json: task 1 \(id 2\): data\.task_key is missing"):
        parse_export(bad, "e.json")
    no_user = fx.export_file_tasks("scope", {"one": 1})
    del no_user[2]["annotations"][0]["completed_by"]
    with pytest.raises(ExportError, match=r"task 2 \(id 3\): an annotation has no completed_by"):
        parse_export(no_user, "e.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ExportError, match=rf"{broken}: not a JSON file"):
        read_export_file(broken)
    with pytest.raises(ExportError, match="does not exist"):
        read_export_file(tmp_path / "missing.json")
    wrong = fx.export_file_tasks("scope", {"one": 1})
    wrong[0]["annotations"][0]["result"] = fx.scope_result("PAEDIATRICS")
    assert parse_export(wrong, "e.json")["status"].to_list() == ["invalid", "labelled", "labelled"]


def test_fingerprint_changes_with_any_annotation_change():
    tasks = fx.export_file_tasks("scope", {"one": 1, "two": 2})
    base = annotations_fingerprint({"scope": tasks})
    assert annotations_fingerprint({"scope": json.loads(json.dumps(tasks))}) == base
    tasks[0]["annotations"][0]["updated_at"] = "2027-01-01T00:00:00Z"
    edited = annotations_fingerprint({"scope": tasks})
    tasks[1]["annotations"].pop()
    popped = annotations_fingerprint({"scope": tasks})
    tasks[2]["meta"] = {"synthetic": True}
    assert len({base, edited, popped, annotations_fingerprint({"scope": tasks})}) == 4


def test_every_row_says_whether_it_is_synthetic_from_its_own_mark():
    tasks = fx.export_file_tasks("scope", {"one": 1, "two": 2})
    tasks[0]["annotations"][1]["synthetic"] = True  # one made-up annotation
    tasks[2]["meta"] = {"synthetic": True}  # a made-up task: both its annotations
    rows = parse_export(tasks, "clinicians.json")
    assert rows.select("task_key", "annotator_id", "synthetic").rows() == [
        ("scope:mb-1", "1", False),
        ("scope:mb-1", "2", True),
        ("scope:mb-2", "1", False),
        ("scope:mb-2", "2", False),
        ("scope:mb-3", "1", True),
        ("scope:mb-3", "2", True),
    ]
    majority = majority_labels(latest_per_annotator(rows)[0], 2)
    assert majority.select("task_key", "synthetic").rows() == [
        ("scope:mb-1", True),
        ("scope:mb-2", False),
        ("scope:mb-3", True),
    ]
    tasks[1]["annotations"][0]["synthetic"] = "yes"
    with pytest.raises(
        ExportError,
        match=r"^clinicians\.json: task 1 \(id 2\), annotation 0: synthetic is 'yes', "
        "not true or false$",
    ):
        parse_export(tasks, "clinicians.json")
