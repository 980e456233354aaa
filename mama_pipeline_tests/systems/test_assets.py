"""The systems group materialised against the fault-injecting fake server, with real BM25 for RAG."""

from __future__ import annotations

import json

import dagster as dg
import polars as pl
import pytest
import yaml

from mama_pipeline.llm.prompt_template import PromptTemplate
from mama_pipeline.resources import shared_resources
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline.systems import _graders as systems_graders
from mama_pipeline.systems import _grading as grading
from mama_pipeline.systems import assets as systems_assets
from mama_pipeline.systems.checks import CHECKS
from mama_pipeline.systems.definitions import build_defs
from mama_pipeline_tests.support.llm_stages import with_embedded
from mama_pipeline_tests.systems.fixtures import (
    chunks_frame,
    criteria_frame,
    grade,
    harness_frame,
    items_frame,
    mcq,
    rubric,
    short,
    verdict,
)

CRITERIA = [
    f"Advises skin-to-skin contact {verdict(True)}",
    f"Recommends a bottle {verdict(False)}",
    f"Says to keep the baby warm {verdict(True)}",
]
CLEAN_ITEMS = [
    mcq(
        "m-clean-1",
        'Drug of choice for eclampsia? [[answer:{"answer": "B"}]]',
        ["oxytocin", "magnesium sulfate", "diazepam", "phenytoin"],
        1,
        category=None,
    ),
    mcq(
        "m-clean-2",
        'Uterotonic after birth? [[answer:{"answer": "C"}]]',
        ["magnesium", "nifedipine", "oxytocin", "labetalol"],
        0,
        pool="medqa_usmle",
        category="MATERNAL",
    ),
    short("s-1", "A newborn is cold after birth. What do you do?", f"Dry, skin-to-skin, cover {grade('correct')}"),
    short("s-2", "Heavy bleeding after birth: first drug?", f"Oxytocin 10 IU IM {grade('partially_correct')}"),
    rubric("r-1", "How do I keep my newborn warm?", [(CRITERIA[0], 5), (CRITERIA[1], -3), (CRITERIA[2], 4)]),
]
FAULTY_ITEMS = [
    mcq("m-500", "Always fails [[fault:500]]", ["a", "b", "c", "d"], 0),
    mcq("m-malformed", "Never JSON [[fault:malformed]]", ["a", "b", "c", "d"], 0),
    mcq("m-slow", "Too slow [[fault:slow=3]]", ["a", "b", "c", "d"], 0),
    mcq("m-invalid", 'Answers a letter it does not have [[answer:{"answer": "E"}]]', ["a", "b", "c", "d"], 0),
    short("s-bad-grade", "Any question", "A reference the grader cannot grade [[fault:schema]]"),
]


def write_config(tmp_path, url, systems, llm: dict | None = None, **extra) -> str:
    fast = {"backoff_base_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 1.5, "max_retries": 1}
    cfg = {
        "data_dir": str(tmp_path / "data"),
        "llm": {
            stage: {"base_urls": [url], "model": f"fake-{stage}", **fast, **(llm or {}).get(stage, {})}
            for stage in ("answer_grader", "rubric_judge")
        },
        "retrieval": {"retrievers": [{"name": "bm25", "kind": "bm25", "params": {"threads": 1, "input_files": 1}}]},
        "systems": {"entries": [{"base_urls": [url], **fast, **s} for s in systems], "resamples": 200, **extra},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(with_embedded(cfg)))
    return str(path)


CLOSED = {"name": "closed", "model": "fake-a"}
RAG = {"name": "rag", "model": "fake-a", "mode": "rag", "retriever": "bm25", "k": 2, "baseline": "closed"}


def materialise(
    config: str,
    items: list[dict],
    names: list[str],
    select: str,
    partition: str | None = None,
    raise_on_error: bool = True,
):
    @dg.asset(key="mamabench_items")
    def stub_items() -> pl.DataFrame:
        return items_frame(items)

    @dg.asset(key="mamabench_criteria")
    def stub_criteria() -> pl.DataFrame:
        return criteria_frame(CRITERIA)

    @dg.asset(key="corpus_chunks")
    def stub_chunks() -> pl.DataFrame:
        return chunks_frame()

    @dg.asset(key="calibration_harness_report")
    def stub_harness() -> pl.DataFrame:
        return harness_frame()

    assets = build_defs(load_settings(config)).assets  # systems.entries are ``names``
    selection = dg.AssetSelection.assets(*select.split())
    with dg.instance_for_test() as instance:
        return dg.materialize(
            [stub_items, stub_criteria, stub_chunks, stub_harness, *assets, *CHECKS],
            resources=shared_resources(config),
            selection=selection,
            partition_key=partition,
            instance=instance,
            raise_on_error=raise_on_error,
        )


def run_all(config, items, names):
    materialise(
        config,
        items,
        names,
        "mamabench_items mamabench_criteria corpus_chunks calibration_harness_report systems_items",
    )
    results = [materialise(config, items, names, "system_answers system_grades", name) for name in names]
    materialise(config, items, names, "system_scoreboard system_comparisons systems_report")
    return results


def calls(server) -> int:
    return server.stats()["chat_calls"]


def test_faults_are_listed_broken_output_scores_zero_and_checks_pass(tmp_path, fake_llm):
    # bounds that these faults stay under: 2 of 6 mcq items unanswered, 1 of 3 short answers ungraded
    config = write_config(
        tmp_path, fake_llm.url, [{**CLOSED, "max_failure_rate": 0.5}], llm={"answer_grader": {"max_failure_rate": 0.5}}
    )
    (result,) = run_all(config, CLEAN_ITEMS + FAULTY_ITEMS, ["closed"])
    assert all(c.passed for c in result.get_asset_check_evaluations())
    store = Store(tmp_path / "data" / "mama.duckdb")
    answers = {r["item_id"]: r for r in store.read_table("system_answers").iter_rows(named=True)}
    assert answers["m-500"]["status"] == "transport_failed" and "HTTP 500" in answers["m-500"]["error"]
    assert answers["m-slow"]["status"] == "transport_failed" and "Timeout" in answers["m-slow"]["error"]
    assert answers["m-malformed"]["status"] == "parse_failed" and answers["m-malformed"]["answer"] is None
    grades = {r["item_id"]: r for r in store.read_table("system_grades").iter_rows(named=True)}
    for item in ("m-500", "m-slow"):
        assert grades[item]["status"] == "answer_failed" and grades[item]["score"] is None
    assert (grades["m-malformed"]["status"], grades["m-malformed"]["score"], grades["m-malformed"]["invalid"]) == (
        "graded",
        0.0,
        True,
    )
    assert grades["s-bad-grade"]["status"] == "grade_failed" and grades["s-bad-grade"]["score"] is None
    assert (grades["m-invalid"]["invalid"], grades["m-invalid"]["score"]) == (True, 0.0)
    assert (grades["m-clean-1"]["correct"], grades["m-clean-2"]["correct"]) == (True, False)
    assert (grades["s-1"]["score"], grades["s-2"]["score"]) == (1.0, 0.5)
    assert grades["r-1"]["score"] == pytest.approx(9 / 9) and grades["r-1"]["grade"] == "9/9"

    board = store.read_table("system_scoreboard")
    mcq_all = board.filter((pl.col("track") == "mcq") & (pl.col("segment_kind") == "all")).row(0, named=True)
    # scored: clean-1 right, clean-2 wrong, invalid and malformed wrong; two transport failures left out
    assert (mcq_all["n_items"], mcq_all["n_scored"], mcq_all["n_unanswered"], mcq_all["n_invalid"]) == (6, 4, 2, 2)
    assert mcq_all["mean"] == pytest.approx(1 / 4) and mcq_all["mean_unanswered_as_0"] == pytest.approx(1 / 6)
    rubric_all = board.filter((pl.col("track") == "rubric") & (pl.col("segment_kind") == "all")).row(0, named=True)
    assert rubric_all["grader_macro_f1"] == 0.71

    page = tmp_path / "data" / "reports" / "systems" / "systems.html"
    text = page.read_text()
    assert "Failures" in text and "m-500" in text and "HealthBench score" in text and "0.710" in text
    lines = [json.loads(x) for x in (page.parent / "items" / "closed.jsonl").read_text().splitlines()]
    assert {x["item_id"] for x in lines} == {r["item_id"] for r in CLEAN_ITEMS + FAULTY_ITEMS}
    assert {"item_id", "answer", "grade", "score", "chunk_ids"} <= set(lines[0])


@pytest.mark.slow  # real Lucene BM25 for the RAG system
def test_rag_gets_chunk_ids_a_second_system_asks_only_itself_and_a_new_grader_prompt_regrades(
    tmp_path, fake_llm, monkeypatch
):
    config = write_config(tmp_path, fake_llm.url, [CLOSED])
    before = calls(fake_llm)
    run_all(config, CLEAN_ITEMS, ["closed"])
    first = calls(fake_llm) - before
    assert first == 5 + 2 + 3  # five answers, two short-answer grades, three rubric criteria

    before = calls(fake_llm)
    run_all(config, CLEAN_ITEMS, ["closed"])
    assert calls(fake_llm) == before  # re-run: every answer and grade from the cache

    config = write_config(tmp_path, fake_llm.url, [CLOSED, RAG])
    before = calls(fake_llm)
    materialise(config, CLEAN_ITEMS, ["closed", "rag"], "system_answers system_grades", "closed")
    assert calls(fake_llm) == before  # the first system is not asked again
    materialise(config, CLEAN_ITEMS, ["closed", "rag"], "system_answers system_grades", "rag")
    # the RAG system's prompts differ (retrieved chunks): its five answers, and the grades of its answers, are new
    assert calls(fake_llm) - before == 5 + 2 + 3
    materialise(config, CLEAN_ITEMS, ["closed", "rag"], "system_scoreboard system_comparisons systems_report")
    store = Store(tmp_path / "data" / "mama.duckdb")
    rag = store.read_table("system_answers", partitions=["rag"])
    assert rag["chunk_ids"].list.len().is_between(1, 2).all()  # BM25 returns only chunks sharing a term
    chunk_ids = set(store.read_table("corpus_chunks")["chunk_id"])
    assert set(rag["chunk_ids"].explode()) <= chunk_ids
    comparisons = store.read_table("system_comparisons")
    assert set(comparisons.filter(pl.col("comparison") == "rag_vs_baseline")["system_a"]) == {"rag"}
    text = (tmp_path / "data" / "reports" / "systems" / "systems.html").read_text()
    assert "Closed-book vs RAG" in text and "deltas.png" in text

    new_prompt = PromptTemplate(
        id=grading.SHORT_ANSWER_GRADER_PROMPT.id,
        system=grading.SHORT_ANSWER_GRADER_PROMPT.system + " Be terse.",
        user=grading.SHORT_ANSWER_GRADER_PROMPT.user,
    )
    monkeypatch.setattr(grading, "SHORT_ANSWER_GRADER_PROMPT", new_prompt)
    monkeypatch.setattr(systems_assets, "SHORT_ANSWER_GRADER_PROMPT", new_prompt)
    monkeypatch.setattr(systems_graders, "SHORT_ANSWER_GRADER_PROMPT", new_prompt)
    before = calls(fake_llm)
    materialise(config, CLEAN_ITEMS, ["closed", "rag"], "system_answers system_grades", "closed")
    assert calls(fake_llm) - before == 2  # only the two short answers are graded again
    grades = store.read_table("system_grades", partitions=["closed"])
    assert set(grades.filter(pl.col("track") == "short_answer")["grader_prompt_hash"]) == {new_prompt.hash}
