"""Every adapter on the real fixture rows, plus hand-made bad rows in each upstream format."""

from __future__ import annotations

import json

import polars as pl
import pytest

from mama_pipeline.mamabench._adapters import adapt_pool
from mama_pipeline.mamabench._schema import CanonicalItem
from mama_pipeline.store.table_schema import table_schema
from mama_pipeline_tests.mamabench.helpers import SETTINGS, adapted, raw, status_counts


def frame(records: list[dict], origin: str = "hand.jsonl") -> pl.DataFrame:
    return pl.DataFrame(
        [(origin, i, None, json.dumps(r), "0" * 64, None) for i, r in enumerate(records)],
        schema=table_schema("mamabench_raw_medmcqa"),  # every pool's raw table has this shape
        orient="row",
    )


def items(df: pl.DataFrame) -> list[CanonicalItem]:
    return [CanonicalItem.model_validate_json(j) for j in df["item_json"].drop_nulls()]


def test_every_upstream_row_gets_exactly_one_adapted_row() -> None:
    for pool in (
        "medmcqa",
        "medqa_usmle",
        "afrimedqa_mcq",
        "kenya_vignettes",
        "afrimedqa_saq",
        "whb",
        "healthbench_oss_eval",
        "healthbench_consensus",
        "healthbench_hard",
    ):
        a, r = adapted(pool), raw(pool)
        assert a.height == r.height
        assert (
            a.select("origin", "upstream_index")
            .sort("upstream_index")
            .equals(r.select("origin", "upstream_index").sort("upstream_index"))
        )
        assert a.filter(pl.col("status") == "refused")["reason"].null_count() == 0


def test_ids_are_stable_across_runs() -> None:
    for pool in ("medqa_usmle", "whb", "healthbench_hard"):
        assert adapted(pool)["item_id"].to_list() == adapted(pool)["item_id"].to_list()


def test_medmcqa_is_prescoped_by_subject() -> None:
    a = adapted("medmcqa")
    assert status_counts(a) == {("kept", None): 60, ("out_of_scope", None): 60}
    kept = items(a.filter(pl.col("status") == "kept"))
    subjects = {t for i in kept for t in i.source.metadata.tags if t.startswith("subject:")}
    assert subjects == {"subject:Gynaecology & Obstetrics", "subject:Pediatrics"}
    first = next(i for i in kept if i.source.id == "de09d388-bd4e-42a9-ac6b-ee2d95f822e2")
    assert first.id == "medmcqa:de09d388-bd4e-42a9-ac6b-ee2d95f822e2"
    assert first.answer_index == 1 and first.answer == "Pulmonary atresia" and len(first.choices) == 4
    assert "non_ascii_typography" in first.source.metadata.cosmetic_defects  # "X–ray", kept as is
    assert "X–ray" in first.question
    assert a.filter(pl.col("status") == "kept")["scope_mode"].null_count() == 60  # bypasses the classifier


def test_medmcqa_bad_rows_are_refused_with_reasons() -> None:
    base = {
        "question": "Drug of choice for eclampsia?",
        "opa": "Magnesium sulphate",
        "opb": "Diazepam",
        "opc": "Phenytoin",
        "opd": "Labetalol",
        "cop": 0,
        "choice_type": "single",
        "subject_name": "Gynaecology & Obstetrics",
        "topic_name": None,
    }
    rows = [
        {**base, "id": "ok"},
        {**base, "id": "test-split", "cop": -1},
        {**base, "id": "dup-text", "opc": "magnesium  sulphate"},
        {**base, "id": "empty", "question": " "},
        {**base, "id": "hole", "opb": ""},
        {**base, "id": "ok"},  # repeated upstream id
    ]
    a = adapt_pool("medmcqa", frame(rows), SETTINGS)
    assert a["reason"].to_list() == [
        None,
        "answer_outside_options",
        "duplicated_correct_text",
        "empty_question",
        "unparseable_options",
        "duplicate_id",
    ]
    assert a["in_prescope"].to_list() == [True] * 6


def test_medmcqa_rows_outside_the_kept_subjects_are_out_of_scope_whatever_their_defects() -> None:
    base = {
        "question": "Drug of choice for eclampsia?",
        "opa": "Magnesium sulphate",
        "opb": "Diazepam",
        "opc": "Phenytoin",
        "opd": "Labetalol",
        "cop": 0,
        "choice_type": "single",
        "subject_name": "Gynaecology & Obstetrics",
        "topic_name": None,
    }
    rows = [
        {**base, "id": "in-dup", "opc": "magnesium sulphate"},
        {**base, "id": "out-dup", "opc": "magnesium sulphate", "subject_name": "Anatomy"},
        {**base, "id": "out-empty", "question": "", "subject_name": "Surgery"},
        {**base, "id": "out-ok", "subject_name": "Surgery"},
        {**base, "id": "out-ok", "subject_name": "Surgery"},  # repeated id outside the scope
    ]
    a = adapt_pool("medmcqa", frame(rows), SETTINGS)
    assert a.select("status", "reason").rows() == [
        ("refused", "duplicated_correct_text"),
        ("out_of_scope", None),
        ("out_of_scope", None),
        ("out_of_scope", None),
        ("out_of_scope", None),
    ]
    assert a["detail"][1] == "outside the pre-scope; also not scorable: duplicated_correct_text (A repeated at C)"
    assert a["detail"][2] == "outside the pre-scope; also not scorable: empty_question"


def test_medqa_goes_to_the_classifier_in_mcq_mode() -> None:
    a = adapted("medqa_usmle")
    assert status_counts(a) == {("pending", None): 150}
    assert set(a["scope_mode"]) == {"mcq"}
    first = items(a)[0]
    assert first.choices[first.answer_index] == json.loads(raw("medqa_usmle")["record"][0])["answer"]
    assert "Options:\nA. " in a["scope_input"][0] and first.choices[3] in a["scope_input"][0]
    assert first.id == "medqa_usmle:" + first.source.id and len(first.source.id) == 16


def test_medqa_bad_rows() -> None:
    base = {
        "question": "Q?",
        "answer": "b",
        "options": {"A": "a", "B": "b", "C": "c", "D": "d"},
        "answer_idx": "B",
        "meta_info": "step1",
    }
    rows = [
        base,
        {**base, "question": "Q2?", "answer": "c"},
        {**base, "question": "Q3?", "answer_idx": "E"},
        {**base, "question": "Q4?", "options": ["a", "b"]},
        base,
    ]
    a = adapt_pool("medqa_usmle", frame(rows), SETTINGS)
    assert a["reason"].to_list() == [
        None,
        "answer_text_mismatch",
        "answer_outside_options",
        "unparseable_options",
        "duplicate_id",
    ]


def test_afrimed_mcq_refuses_the_multi_answer_row_and_prescopes_obstetrics() -> None:
    a = adapted("afrimedqa_mcq")
    # the multi-answer row is outside the obstetrics pre-scope: out of scope, not a refusal
    assert status_counts(a) == {("kept", None): 4, ("out_of_scope", None): 6}
    multi = a.filter(pl.col("upstream_id").str.starts_with("1f2756560b3598b5")).row(
        0, named=True
    )  # "Erectile dysfunction"
    assert multi["detail"] == "outside the pre-scope; also not scorable: multiple_correct (A,C,D,E)"
    assert multi["item_json"] is None
    kept = items(a.filter(pl.col("status") == "kept"))
    assert all("specialty:Obstetrics_and_Gynecology" in i.source.metadata.tags for i in kept)
    assert {len(i.choices) for i in kept} == {5}
    endometriosis = next(i for i in kept if i.question.startswith("Protective factor"))
    assert endometriosis.answer == "Smoking" and endometriosis.answer_index == 3
    assert endometriosis.question == "Protective factor for endometriosis:"  # surrounding whitespace only


def test_afrimed_options_parsing_failures() -> None:
    base = json.loads(raw("afrimedqa_mcq")["record"][2])  # an OBGYN expert row
    rows = [
        {**base, "sample_id": "not-json", "answer_options": "{option1: x"},
        {**base, "sample_id": "gap", "answer_options": json.dumps({"option1": "a", "option3": "c"})},
        {**base, "sample_id": "letter", "correct_answer": "option9"},
        {
            **base,
            "sample_id": "trailing",
            "answer_options": json.dumps({"option1": "a", "option2": "b", "option3": "c", "option4": None}),
            "correct_answer": "option2",
        },
    ]
    a = adapt_pool("afrimedqa_mcq", frame(rows, "x.csv"), SETTINGS)
    assert a["reason"].to_list() == ["unparseable_options", "unparseable_options", "answer_outside_options", None]
    assert items(a)[0].choices == ["a", "b", "c"]
    assert a["cosmetic_defects"][3].to_list() == ["terse_stem", "trailing_empty_options"]


def test_kenya_vignettes_are_classified_open_ended_with_prior_labels_kept_aside() -> None:
    a = adapted("kenya_vignettes")
    assert status_counts(a) == {("pending", None): 60}
    assert a["item_id"][0] == "kenya_vignettes:5" and a["prior_category"][0] == "SRH"
    first = items(a)[0]
    assert first.set_type == "open_ended" and first.answer.startswith("SUMMARY")
    assert a["scope_input"][0].startswith("[USER]\nI am a nurse with 12 years of experience")
    assert "prior_category" not in a["item_json"][0] and items(a)[0].source.metadata.tags == []


def test_afrimed_saq_is_prescoped_and_refuses_rows_without_an_answer() -> None:
    a = adapted("afrimedqa_saq")
    by_id = dict(zip(a["upstream_id"], a["status"]))
    assert by_id == {
        "fixture-saq-01": "kept",
        "fixture-saq-02": "kept",
        "fixture-saq-03": "kept",
        "fixture-saq-04": "out_of_scope",
        "fixture-saq-05": "refused",
        "fixture-saq-06": "out_of_scope",
    }
    assert a.filter(pl.col("status") == "refused")["reason"].to_list() == ["empty_answer"]
    assert items(a)[0].answer.startswith("Oxytocin")


def test_whb_items_are_all_kept_with_content_ids() -> None:
    a = adapted("whb")
    assert status_counts(a) == {("kept", None): 20}
    first = items(a)[0]
    assert first.question.startswith("I am breastfeeding") and first.answer.startswith("Symptoms are consistent")
    assert a["item_id"].n_unique() == 20


def test_healthbench_rubric_items_and_criteria_side_table() -> None:
    a = adapted("healthbench_oss_eval")
    assert status_counts(a) == {("pending", None): 40}
    first = items(a)[0]
    record = json.loads(raw("healthbench_oss_eval")["record"][0])
    assert first.id == f"healthbench_oss_eval:{record['prompt_id']}"
    assert [m.content for m in first.question] == [m["content"] for m in record["prompt"]]
    assert [r.points for r in first.rubrics] == [r["points"] for r in record["rubrics"]]
    criteria = json.loads(a["criteria_json"][0])
    assert [c["criterion"] for c in criteria] == [r["criterion"] for r in record["rubrics"]]
    assert {c["criterion_id"] for c in criteria} == {r.criterion_id for r in first.rubrics}
    assert a["join_key"][0] == record["prompt_id"]
    multi_turn = a.filter(pl.col("scope_input").str.contains(r"\[ASSISTANT\]"))
    assert multi_turn.height == 14  # conversations with assistant turns are rendered by role


def test_healthbench_consensus_waits_for_the_oss_eval_verdict_and_hard_refuses_a_bad_row() -> None:
    c = adapted("healthbench_consensus")
    assert status_counts(c) == {("pending", None): 11} and c["scope_mode"].null_count() == 11
    h = adapted("healthbench_hard")
    assert status_counts(h) == {("pending", None): 6, ("refused", "conversation_not_ending_in_user_turn"): 1}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"prompt": []}, "empty_question"),
        ({"prompt": [{"role": "user"}]}, "malformed_conversation"),
        ({"rubrics": []}, "empty_rubric"),
        ({"rubrics": [{"criterion": "x", "points": 0, "tags": []}]}, "invalid_rubric_points"),
        ({"rubrics": [{"criterion": "x", "points": 11, "tags": []}]}, "invalid_rubric_points"),
        ({"rubrics": [{"criterion": "x", "points": 2.5, "tags": []}]}, "invalid_rubric_points"),
        ({"rubrics": [{"criterion": " ", "points": 2, "tags": []}]}, "empty_criterion"),
        ({"prompt_id": ""}, "missing_prompt_id"),
    ],
)
def test_healthbench_bad_rows(change: dict, reason: str) -> None:
    base = json.loads(raw("healthbench_oss_eval")["record"][0])
    a = adapt_pool("healthbench_oss_eval", frame([{**base, **change}]), SETTINGS)
    assert a["reason"].to_list() == [reason]
