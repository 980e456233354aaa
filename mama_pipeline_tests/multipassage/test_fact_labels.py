"""Fact labels: which of a question's facts each pooled chunk states, through the fault-injecting server; the
judge's failures on the track counted against llm.judge.max_failure_rate."""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.multipassage._fact_labels import label_facts
from mama_pipeline.multipassage._failures import FACTS_UNIT, RELEVANCE_UNIT, label_bounds, over_bound
from mama_pipeline.multipassage._multipassage_prompts import fact_judge_template, facts_stated_model

QUESTIONS = pl.DataFrame(
    {
        "query_id": ["mq_00001", "mq_00002"],
        "query_text": ["Q one?", "Q two?"],
        "facts": [["give oxytocin", "massage the uterus"], ["a", "b", "c"]],
    }
)
CHUNKS = {
    "c1": {"source": "s", "section": "S", "text": 'passage one [[answer:{"facts": [2]}]]'},
    "c2": {"source": "s", "section": "S", "text": "passage two [[fault:malformed]]"},
    "c3": {"source": "s", "section": "S", "text": 'passage three [[answer:{"facts": [3, 1, 3]}]]'},
    "c4": {"source": "s", "section": "S", "text": 'passage four [[answer:{"facts": []}]]'},
}
POOL = pl.DataFrame(
    {
        "query_id": ["mq_00001", "mq_00001", "mq_00002", "mq_00002", "mq_00001"],
        "chunk_id": ["c1", "c2", "c3", "c4", "gone"],
        "is_seed": [True, False, False, True, False],
    }
)


def test_every_pooled_pair_is_labelled_with_its_facts_or_listed_as_failed(make_client, fake_llm):
    client = make_client(stage="judge", parse_retries=0)
    template = fact_judge_template(False)
    labels, reports = label_facts(client, template, False, POOL, QUESTIONS, CHUNKS)
    got = {
        (q, c): (st, f, r)
        for q, c, st, f, r in labels.select("query_id", "chunk_id", "status", "facts", "failure_reason").iter_rows()
    }
    assert got[("mq_00001", "c1")] == ("labelled", [2], None)
    assert got[("mq_00002", "c3")] == ("labelled", [1, 3], None)  # each fact once, in order
    assert got[("mq_00002", "c4")] == ("labelled", [], None)  # states none: a label, not a failure
    assert got[("mq_00001", "c2")][0] == "failed" and got[("mq_00001", "c2")][2].startswith("parse_failed")
    assert got[("mq_00001", "gone")] == ("failed", None, "chunk_id not in the current corpus")
    assert labels.filter(pl.col("chunk_id") == "c4")["required_piece"].to_list() == [True]
    assert set(labels["prompt_hash"]) == {template.hash}
    assert {n: len(r.results) for n, r in reports.items()} == {2: 2, 3: 2}  # one request per pair asked
    # a re-run is served from the cache: the same labels and failures, no new call
    calls = fake_llm.stats()["chat_calls"]
    again, _ = label_facts(client, template, False, POOL, QUESTIONS, CHUNKS)
    assert again.equals(labels)
    assert fake_llm.stats()["chat_calls"] == calls


def test_the_fact_judge_schema_names_only_the_question_facts():
    schema = facts_stated_model(True, 3).model_json_schema()
    assert list(schema["properties"]) == ["reasoning", "facts"]  # reasoning first
    assert schema["properties"]["facts"]["items"] == {"maximum": 3, "minimum": 1, "type": "integer"}
    with pytest.raises(ValueError):
        facts_stated_model(False, 2).model_validate({"facts": [3]})
    text = fact_judge_template(False).render(question="Q?", facts="1. a\n2. b", passages="<passage>")[1]["content"]
    assert text == "Question: Q?\n\nFacts:\n1. a\n2. b\n\n<passage>"


def test_judge_failures_on_the_track_are_bounded():
    labels = pl.DataFrame({"status": ["labelled"] * 19 + ["failed"]})  # 1 of 20 = 5%: at the bound, not over
    facts = pl.DataFrame({"status": ["labelled"] * 9 + ["failed"]})  # 1 of 10 = 10%
    stages = label_bounds(labels, facts, 0.05)
    assert [(s.unit, s.failed, s.total, s.over) for s in stages] == [
        (RELEVANCE_UNIT, 1, 20, False),
        (FACTS_UNIT, 1, 10, True),
    ]
    assert over_bound(stages) == (
        "stage judge: 1 of 10 multi-passage pooled pairs (facts) failed (10.00%), "
        "bound 5.00% (llm.judge.max_failure_rate)"
    )
    assert over_bound(label_bounds(labels, facts, 0.1)) is None


def test_the_budget_covers_every_number_of_facts_before_the_first_is_sent(make_client, fake_llm):
    from mama_pipeline.llm.budget import BudgetExceeded

    # 4 pairs asked, 2 with two facts and 2 with three (two runs); each run alone fits a budget of 3, both do not
    before = fake_llm.stats()["chat_calls"]
    with pytest.raises(BudgetExceeded, match=r"^stage judge: .*: 4 new requests > max_new_requests 3$"):
        label_facts(
            make_client(stage="judge", parse_retries=0, max_new_requests=3),
            fact_judge_template(False),
            False,
            POOL,
            QUESTIONS,
            CHUNKS,
        )
    assert fake_llm.stats()["chat_calls"] == before
