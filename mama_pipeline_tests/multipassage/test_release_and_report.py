"""The multipassage configuration of the mamaretrieval release: refusals, verification, deterministic bytes;
the report page renders."""

from __future__ import annotations

import hashlib
import json

import polars as pl
import pytest

from mama_pipeline.evaluation._measure_names import measure_names
from mama_pipeline.evaluation._scoreboard_measures import mamaretrieval_plan
from mama_pipeline.llm.settings import StageSettings
from mama_pipeline.multipassage._multipassage_page import render
from mama_pipeline.multipassage._multipassage_prompts import fact_judge_template
from mama_pipeline.release._mamaretrieval import ReleaseError, write_mamaretrieval_release
from mama_pipeline.release._multipassage_part import (
    TrackInputs,
    build_part,
    diversity_qrels,
    multipassage_part,
    prompt_infos,
)
from mama_pipeline.release._verify import verify_release
from mama_pipeline.settings import load_settings
from mama_pipeline.store import Store
from mama_pipeline_tests.release import fixtures as fx
from mama_pipeline_tests.support.llm_stages import with_embedded

C1, C2, C3 = fx.IDS[:3]


def track(**over) -> TrackInputs:
    questions = pl.DataFrame(
        {
            "query_id": ["mq_00001"],
            "query_text": ["Q?"],
            "set_id": ["ms_a"],
            "chunk_ids": [[C1, C2]],
            "facts": [["fact one", "fact two"]],
            "fact_chunk_ids": [[C1, C2]],
            "kind": ["section"],
            "size": [2],
            "source": ["who-a"],
            "tier": ["high"],
        }
    )
    decisions = pl.DataFrame(
        {
            "set_id": ["ms_a", "ms_b"],
            "kind": ["section"] * 2,
            "size": [2, 2],
            "chunk_ids": [[C1, C2], [C2, C3]],
            "source": ["who-a"] * 2,
            "tier": ["high"] * 2,
            "status": ["kept", "set_incomplete"],
            "question": ["Q?", "Secret?"],
            "facts": [["fact one", "fact two"], ["secret fact", "other"]],
            "fact_verdicts": [["stated", "stated"], ["stated", "stated"]],
            "set_verdict": ["complete", "partial"],
            "alone_verdicts": [["partial", "none"], ["none", "none"]],
            "writer_model": ["w"] * 2,
            "verifier_model": ["v"] * 2,
        }
    )
    rankings = pl.DataFrame(
        {
            "query_id": ["mq_00001"] * 2,
            "retriever": ["bm25"] * 2,
            "rank": [1, 2],
            "chunk_id": [C3, C1],
            "score": [2.0, 1.0],
        }
    )
    labels = pl.DataFrame(
        {
            "query_id": ["mq_00001"] * 3,
            "chunk_id": [C1, C2, C3],
            "status": ["labelled"] * 3,
            "required_piece": [True, True, False],
            "judge_model": ["j"] * 3,
            "prompt_hash": [fx.JUDGE_HASH] * 3,
            "d1_topic": [True, True, False],
            "d2_meaningful": [2, 1, None],
            "d3_actionable": [2, 0, None],
            "d4_density": [1, 1, None],
            "score": [5, 2, 0],
        }
    )
    fact_labels = pl.DataFrame(
        {  # C3 states fact 2 as C2 does; C1 failed
            "query_id": ["mq_00001"] * 3,
            "chunk_id": [C1, C2, C3],
            "required_piece": [True, True, False],
            "status": ["failed", "labelled", "labelled"],
            "failure_reason": ["parse_failed: not JSON", None, None],
            "facts": [None, [2], [2]],
            "judge_model": ["j"] * 3,
            "prompt_hash": [fact_judge_template(True).hash] * 3,
        }
    )
    stage = StageSettings(reasoning="json_field")
    base = dict(
        questions=questions,
        decisions=decisions,
        rankings=rankings,
        labels=labels,
        fact_labels=fact_labels,
        prompts=prompt_infos(30, [2, 3], stage, stage, stage),
        retrievers=["bm25"],
        pool_depth=2,
        max_failure_rate=0.5,
    )
    return TrackInputs(**{**base, **over})


def write(folder, t: TrackInputs) -> dict:
    return write_mamaretrieval_release(folder, fx.inputs(), [build_part(fx.inputs(), t)])


def tree(folder) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_configuration_is_verified_reproducible_and_ships_no_failed_question(tmp_path):
    m1, m2 = write(tmp_path / "a", track()), write(tmp_path / "b", track())
    assert m1 == m2 and tree(tmp_path / "a") == tree(tmp_path / "b") and verify_release(tmp_path / "a").ok
    mp = {rel for rel in m1["files"] if rel.startswith("multipassage/")}
    stages = ("writer", "verifier", "fact_check", "fact_judge")
    assert mp == {
        "multipassage/questions.parquet",
        "multipassage/rankings.parquet",
        "multipassage/judgments.parquet",
        "multipassage/fact_judgments.parquet",
        "multipassage/decisions.parquet",
        "multipassage/facts.diversity.txt",
        "multipassage/beir/queries/queries-00000-of-00001.parquet",
        "multipassage/beir/qrels/test-00000-of-00001.parquet",
        *(f"multipassage/prompts/multipassage_{k}.txt" for k in stages),
        *(f"multipassage/schema/{k}_answer.schema.json" for k in stages),
    }
    audit = pl.read_parquet(tmp_path / "a" / "multipassage" / "decisions.parquet")
    assert audit["question"].to_list() == ["Q?", None]  # the failed set's question is counted, not shipped
    assert audit["facts"].to_list() == [["fact one", "fact two"], None]  # nor are its facts
    released = pl.read_parquet(tmp_path / "a" / "multipassage" / "questions.parquet").row(0, named=True)
    assert released["facts"] == ["fact one", "fact two"] and released["fact_chunk_ids"] == [C1, C2]
    facts = pl.read_parquet(tmp_path / "a" / "multipassage" / "fact_judgments.parquet")
    assert sorted(facts.select("chunk_id", "facts").rows()) == sorted(
        [(C2, [2]), (C3, [2])]
    )  # the failed pair: no label
    schemas = json.loads((tmp_path / "a" / "multipassage" / "schema" / "writer_answer.schema.json").read_text())
    assert sorted(schemas) == ["set size 2", "set size 3"]
    section = json.loads((tmp_path / "a" / "manifest.json").read_text())["configurations"]["multipassage"]
    assert section["figures"]["not_released"] == 1 and section["figures"]["sets_by_status"] == {
        "kept": 1,
        "set_incomplete": 1,
    }
    assert section["judge"]["prompt_hash"] == fx.JUDGE_HASH and section["question_writer"]["model"] == "w"
    # fact 1: C1, its own chunk; fact 2: C2, its own, and C3, which the judge found stating it too
    assert (tmp_path / "a" / "multipassage" / "facts.diversity.txt").read_text() == (
        f"mq_00001 1 {C1} 1\nmq_00001 2 {sorted([C2, C3])[0]} 1\nmq_00001 2 {sorted([C2, C3])[1]} 1\n"
    )
    assert section["figures"]["facts"] == 2 and section["figures"]["facts_stated_by_another_chunk"] == 1
    card = (tmp_path / "a" / "README.md").read_text()
    assert "## Multi-passage configuration" in card and "| not released (failed writing or verification) | 1 |" in card
    assert "| pairs without a fact label | 1 of 3 |" in card and "| pairs without a relevance label | 0 of 3 |" in card
    assert "two chunks carrying the same fact are redundant" in card and "exceed 50.00% of the pooled pairs" in card
    assert "config_name: multipassage_questions" in card and "path: multipassage/questions.parquet" in card


def test_configuration_refuses_unverified_questions_foreign_chunks_and_stale_labels(tmp_path):
    bad = track().questions.with_columns(set_id=pl.lit("ms_b"))
    with pytest.raises(ReleaseError, match="verification did not pass"):
        write(tmp_path / "x", track(questions=bad))
    foreign = track().rankings.with_columns(chunk_id=pl.lit("gone"))
    with pytest.raises(ReleaseError, match=f"rankings name 1 chunk\\(s\\) not in corpus version {fx.CORPUS_VERSION}"):
        write(tmp_path / "x", track(rankings=foreign))
    outside = track().questions.with_columns(chunk_ids=pl.lit(["gone", C1]))
    with pytest.raises(ReleaseError, match="questions name 1 chunk"):
        write(tmp_path / "x", track(questions=outside))
    stale = track().labels.with_columns(prompt_hash=pl.lit("old"))
    with pytest.raises(ReleaseError, match="prompt hash"):
        write(tmp_path / "x", track(labels=stale))
    stale = track().fact_labels.with_columns(prompt_hash=pl.lit("old"))
    with pytest.raises(ReleaseError, match="fact labels made with prompt hash"):
        write(tmp_path / "x", track(fact_labels=stale))
    assert not (tmp_path / "x").exists()


def test_configuration_refuses_judge_failures_over_the_bound(tmp_path):
    # one of three pooled pairs without a fact label: 33.33%, over a 20% bound
    with pytest.raises(
        ReleaseError,
        match=r"1 of 3 multi-passage pooled pairs \(facts\) failed \(33.33%\), bound "
        r"20.00% \(llm.judge.max_failure_rate\)",
    ):
        write(tmp_path / "x", track(max_failure_rate=0.2))
    assert not (tmp_path / "x").exists()


def test_diversity_qrels_list_every_chunk_stating_each_fact():
    q = pl.DataFrame({"query_id": ["mq_2", "mq_1"], "fact_chunk_ids": [["x", "x", "z"], ["a", "b"]]})
    labels = pl.DataFrame({"query_id": ["mq_2", "mq_1"], "chunk_id": ["w", "b"], "facts": [[1, 3], [1]]})
    assert diversity_qrels(q, labels).decode().splitlines() == [
        "mq_1 1 a 1",
        "mq_1 1 b 1",
        "mq_1 2 b 1",
        "mq_2 1 w 1",
        "mq_2 1 x 1",
        "mq_2 2 x 1",
        "mq_2 3 w 1",
        "mq_2 3 z 1",
    ]


def test_report_page_shows_scoreboard_tests_and_outcomes():
    board = pl.DataFrame(
        {
            "tier": ["all", "all", "high"],
            "retriever": ["a", "a", "a"],
            "measure": ["AllIn@10[pieces]", "Success(rel=3)@5", "AllIn@10[pieces]"],
            "position": [0, 1, 0],
            "track": [True, False, True],
            "mean": [0.5, 0.75, 0.25],
            "n_queries": [4, 4, 2],
        }
    )
    sig = pl.DataFrame(
        {
            "tier": ["all", "high"],
            "measure": ["AllIn@10[pieces]"] * 2,
            "retriever_a": ["a"] * 2,
            "retriever_b": ["b"] * 2,
            "n_queries": [40, 4],
            "diff": [0.5, 0.25],
            "ci_low": [0.1, None],
            "ci_high": [0.9, None],
            "p_randomization_holm": [0.01, 0.6],
            "p_mcnemar_holm": [0.02, 1.0],
            "refused": [None, "interval: 4 values, fewer than the 30 a bootstrap interval needs"],
        }
    )
    cands = pl.DataFrame({"kind": ["section"], "size": [2], "status": ["dropped"], "drop_reason": ["duplicate_set"]})
    decisions = pl.DataFrame({"status": ["kept", "set_incomplete"]})
    names = measure_names(mamaretrieval_plan([5, 10], 3, 5))
    page = render(board, sig, cands, decisions, "AllIn@10[pieces]", 0.05, names=names)
    assert "HR@5 lenient" in page and "Success(rel=" not in page  # the paper's labels
    assert "0.500" in page and "0.750" in page and "<tr class='sig'>" in page
    assert "<td>duplicate_set</td><td>1</td>" in page and "<td>set_incomplete</td><td>1</td>" in page
    assert "AllIn@10[pieces] per tier" in page
    # a refused row is marked, the reason said once below its table with its count
    assert "<td>no interval\u00b9</td>" in page
    assert page.count("fewer than the 30 values a bootstrap interval needs") == 1
    assert "\u00b9 interval refused for 1 cell: fewer than the 30 values" in page


def test_a_configuration_with_no_verified_question_still_counts_every_failure(tmp_path):
    t = track()
    none = track(
        questions=t.questions.clear(),
        rankings=t.rankings.clear(),
        labels=t.labels.clear(),
        fact_labels=t.fact_labels.clear(),
        decisions=t.decisions.with_columns(status=pl.lit("single_chunk_answers")),
    )
    manifest = write(tmp_path / "r", none)
    figures = manifest["configurations"]["multipassage"]["figures"]
    assert figures["questions"] == 0 and figures["not_released"] == 2
    assert verify_release(tmp_path / "r").ok
    assert pl.read_parquet(tmp_path / "r" / "multipassage" / "decisions.parquet")["question"].null_count() == 2


def test_the_configuration_is_built_only_when_switched_on_and_then_needs_the_track(tmp_path):
    store = Store(tmp_path / "empty.duckdb")
    off, on = tmp_path / "off.yaml", tmp_path / "on.yaml"
    off.write_text(with_embedded(f"data_dir: {tmp_path}\n"))
    on.write_text(with_embedded(f"data_dir: {tmp_path}\nmultipassage: {{release: true}}\n"))
    assert multipassage_part(load_settings(off), store, fx.inputs()) is None
    with pytest.raises(ReleaseError, match="table multipassage_questions is not in the store"):
        multipassage_part(load_settings(on), store, fx.inputs())
