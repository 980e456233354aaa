"""The release configuration refuses unverified questions and is byte-reproducible; the report page renders."""
from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.judging.rubric import RELEVANCE_JUDGE, label_prompt_hash, output_model
from mama_pipeline.multipassage.prompts import verifier_model, verifier_template, writer_model, writer_template
from mama_pipeline.multipassage.report import render
from mama_pipeline.release.mamaretrieval import PromptInfo, ReleaseError
from mama_pipeline.release.multipassage import MultipassageInputs, diversity_qrels, write_multipassage_release
from mama_pipeline.release.verify import verify_release

JUDGE = output_model("json_field")
JUDGE_HASH = label_prompt_hash(RELEVANCE_JUDGE, JUDGE)


def inputs(**over) -> MultipassageInputs:
    chunks = pl.DataFrame({"chunk_id": ["c1", "c2", "c3"], "source": ["s"] * 3, "page": [1, 2, 3],
                           "breadcrumb": [["A"]] * 3, "text": ["one", "two", "three"], "corpus_version": ["v1"] * 3})
    questions = pl.DataFrame({"query_id": ["mq_00001"], "query_text": ["Q?"], "set_id": ["ms_a"],
                              "chunk_ids": [["c1", "c2"]], "kind": ["section"], "size": [2], "source": ["s"],
                              "tier": ["high"]})
    decisions = pl.DataFrame({
        "set_id": ["ms_a", "ms_b"], "kind": ["section"] * 2, "size": [2, 2], "chunk_ids": [["c1", "c2"], ["c2", "c3"]],
        "source": ["s"] * 2, "tier": ["high"] * 2, "status": ["kept", "set_incomplete"], "question": ["Q?", "Secret?"],
        "set_verdict": ["complete", "partial"], "alone_verdicts": [["partial", "none"], ["none", "none"]],
        "writer_model": ["w"] * 2, "verifier_model": ["v"] * 2,
    })
    rankings = pl.DataFrame({"query_id": ["mq_00001"] * 2, "retriever": ["r"] * 2, "rank": [1, 2],
                             "chunk_id": ["c3", "c1"], "score": [2.0, 1.0]})
    labels = pl.DataFrame({
        "query_id": ["mq_00001"] * 3, "chunk_id": ["c1", "c2", "c3"], "status": ["labelled"] * 3,
        "required_piece": [True, True, False], "judge_model": ["j"] * 3, "prompt_hash": [JUDGE_HASH] * 3,
        "d1_topic": [True, True, False], "d2_meaningful": [2, 1, None], "d3_actionable": [2, 0, None],
        "d4_density": [1, 1, None], "score": [5, 2, 0],
    })
    w, v = writer_template(30, True), verifier_template(True)
    base = dict(
        version="1.0.0", chunks=chunks, questions=questions, decisions=decisions, rankings=rankings, labels=labels,
        writer=PromptInfo(w, writer_model(True).model_json_schema(), w.hash, 0.0, False),
        verifier=PromptInfo(v, verifier_model(True).model_json_schema(), v.hash, 0.0, False),
        judge=PromptInfo(RELEVANCE_JUDGE, JUDGE.model_json_schema(), JUDGE_HASH, 0.0, False),
        retrievers=["r"], pool_depth=2,
    )
    return MultipassageInputs(**{**base, **over})


def test_release_is_verified_reproducible_and_ships_no_failed_question(tmp_path):
    m1 = write_multipassage_release(tmp_path / "a", inputs())
    m2 = write_multipassage_release(tmp_path / "b", inputs())
    assert m1["files"] == m2["files"] and verify_release(tmp_path / "a").ok
    audit = pl.read_parquet(tmp_path / "a" / "audit" / "decisions.parquet")
    assert audit["question"].to_list() == ["Q?", None]  # the failed set's question is counted, not shipped
    assert m1["figures"]["not_released"] == 1 and m1["figures"]["sets_by_status"] == {"kept": 1, "set_incomplete": 1}
    assert (tmp_path / "a" / "qrels" / "pieces.diversity.txt").read_text() == "mq_00001 0 c1 1\nmq_00001 1 c2 1\n"
    card = (tmp_path / "a" / "README.md").read_text()
    assert "multi-passage track 1.0.0" in card and "| not released (failed writing or verification) | 1 |" in card


def test_release_refuses_unverified_questions_and_foreign_chunks(tmp_path):
    bad = inputs().questions.with_columns(set_id=pl.lit("ms_b"))
    with pytest.raises(ReleaseError, match="verification did not pass"):
        write_multipassage_release(tmp_path / "x", inputs(questions=bad))
    foreign = inputs().rankings.with_columns(chunk_id=pl.lit("gone"))
    with pytest.raises(ReleaseError, match="rankings name 1 chunk"):
        write_multipassage_release(tmp_path / "x", inputs(rankings=foreign))
    stale = inputs().labels.with_columns(prompt_hash=pl.lit("old"))
    with pytest.raises(ReleaseError, match="prompt hash"):
        write_multipassage_release(tmp_path / "x", inputs(labels=stale))
    assert not (tmp_path / "x").exists()


def test_diversity_qrels_number_pieces_per_question():
    q = pl.DataFrame({"query_id": ["mq_2", "mq_1"], "chunk_ids": [["x", "y", "z"], ["a", "b"]]})
    assert diversity_qrels(q).decode().splitlines() == ["mq_1 0 a 1", "mq_1 1 b 1", "mq_2 0 x 1", "mq_2 1 y 1",
                                                        "mq_2 2 z 1"]


def test_report_page_shows_scoreboard_tests_and_outcomes():
    board = pl.DataFrame({"tier": ["all", "all", "high"], "retriever": ["a", "a", "a"],
                          "measure": ["AllIn@10[pieces]", "Success(rel=3)@5", "AllIn@10[pieces]"], "position": [0, 1, 0],
                          "track": [True, False, True], "mean": [0.5, 0.75, 0.25], "n_queries": [4, 4, 2]})
    sig = pl.DataFrame({"tier": ["all"], "measure": ["AllIn@10[pieces]"], "retriever_a": ["a"], "retriever_b": ["b"],
                        "n_queries": [4], "diff": [0.5], "ci_low": [0.1], "ci_high": [0.9],
                        "p_randomization_holm": [0.01], "p_mcnemar_holm": [0.02]})
    cands = pl.DataFrame({"kind": ["section"], "size": [2], "status": ["dropped"], "drop_reason": ["duplicate_set"]})
    decisions = pl.DataFrame({"status": ["kept", "set_incomplete"]})
    page = render(board, sig, cands, decisions, "AllIn@10[pieces]", 0.05)
    assert "0.5000" in page and "0.7500" in page and '<tr class="sig">' in page
    assert "<td>duplicate_set</td><td>1</td>" in page and "<td>set_incomplete</td><td>1</td>" in page
    assert "AllIn@10[pieces] per tier" in page


def test_a_release_with_no_verified_question_still_counts_every_failure(tmp_path):
    inp = inputs()
    none = inputs(questions=inp.questions.clear(), rankings=inp.rankings.clear(), labels=inp.labels.clear(),
                  decisions=inp.decisions.with_columns(status=pl.lit("single_chunk_answers")))
    manifest = write_multipassage_release(tmp_path / "r", none)
    assert manifest["figures"]["questions"] == 0 and manifest["figures"]["not_released"] == 2
    assert verify_release(tmp_path / "r").ok
    assert pl.read_parquet(tmp_path / "r" / "audit" / "decisions.parquet")["question"].null_count() == 2
