"""Issue 24 (1): a system's failures never leave the denominator; figures follow the same values everywhere.

Every expected value is computed by hand in the comments beside it.
"""

from __future__ import annotations

import polars as pl
import pytest

from mama_pipeline.llm.failure_bounds import system_failures
from mama_pipeline.systems import _grading as grading
from mama_pipeline.systems._comparisons import compare_systems
from mama_pipeline.systems._grading import GRADES_SCHEMA
from mama_pipeline.systems._items import benchmark_items
from mama_pipeline.systems._systems_page import SystemsReport, sample_note, write_report
from mama_pipeline.systems._systems_scoreboard import scoreboard
from mama_pipeline_tests.systems.fixtures import criteria_frame, items_frame, mcq, rubric, short
from mama_pipeline_tests.systems.test_scoring import answers, report


def grade_rows(rows: list[tuple[str, str, str, str, float | None, bool | None]]) -> pl.DataFrame:
    """(system, item_id, track, status, score, invalid) rows, category MATERNAL."""
    return pl.DataFrame(
        [
            {
                **{k: None for k in GRADES_SCHEMA},
                "system": s,
                "item_id": i,
                "track": t,
                "pool": "p",
                "category": "MATERNAL",
                "status": st,
                "score": sc,
                "invalid": inv,
                "correct": None if sc is None or t != "mcq" else sc == 1.0,
            }
            for s, i, t, st, sc, inv in rows
        ],
        schema=GRADES_SCHEMA,
    )


def test_own_output_that_cannot_be_graded_is_wrong_in_every_track_and_only_transport_failures_are_unanswered():
    texts = ["c1", "c2"]
    items = benchmark_items(
        items_frame(
            [
                mcq("m1", "q", ["a", "b", "c", "d"], 0),
                mcq("m2", "q", ["a", "b", "c", "d"], 0),
                short("s1", "q", "ref"),
                short("s2", "q", "ref"),
                rubric("r1", "u", [(texts[0], 3), (texts[1], -2)]),
                rubric("r2", "u", [(texts[0], 3)]),
            ]
        )
    )
    ans = answers(
        [
            ("m1", "mcq", "parse_failed", None),
            ("m2", "mcq", "transport_failed", None),
            ("s1", "short_answer", "parse_failed", None),
            ("s2", "short_answer", "transport_failed", None),
            ("r1", "rubric", "parse_failed", None),
            ("r2", "rubric", "transport_failed", None),
        ]
    )
    # neither broken nor unanswered items are asked of a grader
    assert grading.short_answer_requests(ans, items) == []
    assert grading.rubric_requests(ans, items, criteria_frame(texts)) == []
    for mode in ("json_schema", "text"):
        rows = (
            grading.mcq_grades(ans, items, mode)
            + grading.short_answer_grades(ans, items, report("g", {}))
            + grading.rubric_grades(ans, items, criteria_frame(texts), report("r", {}))
        )
        by = {r["item_id"]: r for r in grading.grades_frame(rows, "exclude").iter_rows(named=True)}
        for item in ("m1", "s1", "r1"):
            assert (by[item]["status"], by[item]["score"], by[item]["invalid"], by[item]["grade"]) == (
                "graded",
                0.0,
                True,
                "invalid",
            ), item
            assert by[item]["error"].startswith("parse_failed: ")  # the reason stays with the row
        assert by["m1"]["correct"] is False
        for item in ("m2", "s2", "r2"):
            assert (by[item]["status"], by[item]["score"]) == ("answer_failed", None), item


def test_board_shows_unanswered_mean_over_answered_and_mean_with_unanswered_as_zero():
    # answered: 1, 0, 0 (invalid), 1; unanswered: 1; grader failed: 1 (answered, in neither mean)
    g = grade_rows(
        [
            ("a", "i1", "mcq", "graded", 1.0, False),
            ("a", "i2", "mcq", "graded", 0.0, False),
            ("a", "i3", "mcq", "graded", 0.0, True),
            ("a", "i4", "mcq", "graded", 1.0, False),
            ("a", "i5", "mcq", "answer_failed", None, None),
            ("a", "s1", "short_answer", "graded", 0.5, None),
            ("a", "s2", "short_answer", "grade_failed", None, None),
        ]
    )
    for policy, mean, n_scored in (("exclude", 2 / 4, 4), ("score_zero", 2 / 5, 5)):
        board = scoreboard(g, None, 200, 0, 0.95, policy)
        row = board.filter((pl.col("track") == "mcq") & (pl.col("segment_kind") == "all")).row(0, named=True)
        assert (row["n_items"], row["n_unanswered"], row["n_invalid"], row["n_scored"]) == (5, 1, 1, n_scored)
        assert row["mean_answered"] == pytest.approx(0.5)  # 2 right of 4 answered
        assert row["mean_unanswered_as_0"] == pytest.approx(0.4)  # 2 right of 5
        assert row["mean"] == pytest.approx(mean) and row["refused"] is None
        short_row = board.filter((pl.col("track") == "short_answer") & (pl.col("segment_kind") == "all")).row(
            0, named=True
        )
        assert (short_row["n_grade_failed"], short_row["mean_answered"], short_row["mean_unanswered_as_0"]) == (
            1,
            0.5,
            0.5,
        )


def test_failure_bounds_name_system_track_and_counts_and_refuse_rows_and_comparisons():
    rows = []
    for i in range(10):  # a: 2 of 10 mcq items unanswered; b: all answered
        rows.append(
            ("a", f"i{i}", "mcq", "answer_failed" if i < 2 else "graded", None if i < 2 else float(i % 2), False)
        )
        rows.append(("b", f"i{i}", "mcq", "graded", float(i % 3 == 0), False))
    # short answers: b's grader failed on 1 of 4 asked (the invalid one is not asked)
    for i, status in enumerate(["graded", "graded", "grade_failed", "graded"]):
        rows.append(("b", f"s{i}", "short_answer", status, 1.0 if status == "graded" else None, False))
    rows.append(("b", "s4", "short_answer", "graded", 0.0, True))
    g = grade_rows(rows)
    stages = system_failures(g, {"a": 0.1, "b": 0.1}, {"short_answer": ("answer_grader", 0.2)})
    a_mcq = stages[("a", "mcq")][0]
    assert (a_mcq.failed, a_mcq.total, a_mcq.over) == (2, 10, True)  # 20% > 10%
    assert a_mcq.describe() == (
        "stage system:a mcq: 2 of 10 items failed (20.00%), bound 10.00% (systems.entries[a].max_failure_rate)"
    )
    b_own, b_grader = stages[("b", "short_answer")]
    assert (b_own.failed, b_own.total, b_own.over) == (0, 5, False)
    assert (b_grader.failed, b_grader.total, b_grader.over) == (1, 4, True)  # 25% > 20%
    assert "answer_grader on system:b short_answer: 1 of 4 answers failed" in b_grader.describe()
    assert "llm.answer_grader.max_failure_rate" in b_grader.describe()

    refused = {("a", "mcq"): a_mcq.describe(), ("b", "short_answer"): b_grader.describe()}
    board = scoreboard(g, None, 200, 0, 0.95, "exclude", refused)
    a_rows = board.filter((pl.col("system") == "a") & (pl.col("track") == "mcq"))
    assert (
        a_rows["mean"].null_count()
        == a_rows["mean_answered"].null_count()
        == a_rows["ci_low"].null_count()
        == a_rows.height
    )
    assert set(a_rows["refused"]) == {a_mcq.describe()} and set(a_rows["n_unanswered"]) == {2}
    b_mcq = board.filter((pl.col("system") == "b") & (pl.col("track") == "mcq") & (pl.col("segment_kind") == "all"))
    assert b_mcq["mean"][0] == pytest.approx(4 / 10)  # i0, i3, i6, i9
    assert compare_systems(g, {}, 200, 0, 0.95, refused).is_empty()  # a's mcq refused: no pair left
    assert compare_systems(g, {}, 200, 0, 0.95).height == 1


def test_rubric_board_and_comparisons_use_the_same_per_item_values():
    # example scores below 0: HealthBench's clipped score reads 0 for both systems
    a = [-0.5, -1.0, -0.2, -0.3]
    b = [-2.0, -3.0, -2.5, -2.7]
    g = grade_rows(
        [(s, f"r{i}", "rubric", "graded", v, None) for s, vals in (("a", a), ("b", b)) for i, v in enumerate(vals)]
    )
    board = scoreboard(g, None, 200, 0, 0.95).filter(pl.col("segment_kind") == "all")
    means = dict(board.select("system", "mean").iter_rows())
    assert means["a"] == pytest.approx(-0.5) and means["b"] == pytest.approx(-2.55)  # sum / 4
    assert set(board["healthbench_score"]) == {0.0}
    pair = compare_systems(g, {}, 200, 0, 0.95).row(0, named=True)
    assert (pair["mean_a"], pair["mean_b"]) == (pytest.approx(means["a"]), pytest.approx(means["b"]))
    assert pair["diff"] == pytest.approx(2.05)


def test_exact_mcnemar_only_on_mcq_never_on_a_graded_track_that_happens_to_be_0_or_1():
    vals_a, vals_b = [1.0] * 8 + [0.0] * 2, [0.0] * 8 + [1.0] * 2
    rows = []
    for track in ("mcq", "short_answer", "rubric"):
        for s, vals in (("a", vals_a), ("b", vals_b)):
            rows += [(s, f"{track}-{i}", track, "graded", v, False) for i, v in enumerate(vals)]
    table = compare_systems(grade_rows(rows), {}, 200, 0, 0.95)
    by = {r["track"]: r for r in table.iter_rows(named=True)}
    # mcq: 8 discordant for a, 2 for b: exact two-sided binomial p = 2 * P(X <= 2 | n=10, 1/2) = 2 * 56/1024
    assert (by["mcq"]["only_a"], by["mcq"]["only_b"]) == (8, 2)
    assert by["mcq"]["p_mcnemar"] == pytest.approx(112 / 1024) == by["mcq"]["p_mcnemar_holm"]
    for track in ("short_answer", "rubric"):
        assert by[track]["p_mcnemar"] is None and by[track]["p_mcnemar_holm"] is None
        assert by[track]["p_randomization_holm"] is not None


def test_report_sentences_follow_the_settings_and_state_the_healthbench_differences(tmp_path):
    g = grade_rows(
        [
            ("a", "i1", "rubric", "graded", 0.5, None),
            ("a", "i2", "rubric", "answer_failed", None, None),
            ("a", "i3", "rubric", "graded", 0.0, True),
        ]
    )
    g = g.with_columns(pl.lit("m @ e").alias("grader"))
    from mama_pipeline.systems._answering import ANSWERS_SCHEMA

    ans = pl.DataFrame(
        [("a", i, "rubric", "ok", "x", "x", [], "p", "h", "k", None) for i in ("i1", "i2", "i3")],
        schema=ANSWERS_SCHEMA,
        orient="row",
    )
    pages = {}
    for policy in ("exclude", "score_zero"):
        page = write_report(
            SystemsReport(
                board=scoreboard(g, None, 200, 0, 0.95, policy),
                comparisons=compare_systems(g, {}, 200, 0, 0.95),
                grades=g,
                answers=ans,
                systems=[{"system": "a"}],
                grader={},
                answer_failures=policy,
                rubric_parse_retries=2,
            ),
            tmp_path / policy,
        )
        pages[policy] = page.read_text()
    for text in pages.values():
        assert "Failed calls are listed, not scored" not in text
        assert "without its &quot;[points]&quot; prefix" in text  # what the grader is given
        assert "re-asked 2 times and then listed" in text
        assert "until it parses" in text and "not directly comparable with published HealthBench" in text
        assert "example scores, not clipped, which are the values the paired comparisons use" in text
    assert "left out of the mean (the configured policy)" in pages["exclude"]
    assert "count as 0 in the mean (the configured policy)" in pages["score_zero"]
    assert "left out of the mean" not in pages["score_zero"]

    assert sample_note(7, 0, 0, 6, 0) == "7 items (all)"
    assert sample_note(7, 0, 0, 6, 3) == "7 items (all but the 3 rubric items with more than 6 criteria)"
    assert sample_note(7, 2, 5, 6, 3) == (
        "7 items (2 per track, seed 5, after leaving out the 3 rubric items with more than 6 criteria)"
    )


def test_free_text_cut_at_max_tokens_or_empty_is_a_parse_failure_served_as_such_from_the_cache(make_client, fake_llm):
    from mama_pipeline.llm.client import FreeText, LLMRequest
    from mama_pipeline.systems._systems_prompts import answer_template

    client = make_client(stage="system:c", parse_retries=1)
    template = answer_template("short_answer", "Be brief.")
    requests = [
        LLMRequest(i, template.render(context="", question=q))
        for i, q in (
            ("cut", "Cut off [[fault:malformed]]"),
            ("empty", "Says nothing [[fault:empty]]"),
            ("whole", "A whole answer"),
            ("cut-once", "Cut off once [[fault:malformedx1]]"),
        )
    ]
    before = fake_llm.stats()["chat_calls"]
    res = {r.item_id: r for r in client.run(template, FreeText, requests).results}
    assert (res["cut"].status, res["cut"].error) == ("parse_failed", "answer cut at max_tokens (finish_reason length)")
    assert res["cut"].raw_text == '{"reasoning": "cut off' and res["cut"].attempts == 2  # re-asked per parse_retries
    assert (res["empty"].status, res["empty"].error) == ("parse_failed", "empty answer")
    assert res["whole"].ok and res["cut-once"].ok and res["cut-once"].attempts == 2
    assert fake_llm.stats()["chat_calls"] - before == 2 + 2 + 1 + 2
    again = {r.item_id: r for r in client.run(template, FreeText, requests).results}
    assert again["cut"].from_cache and again["cut"].status == "parse_failed"
    assert fake_llm.stats()["chat_calls"] - before == 7  # nothing asked again


def test_pipeline_grades_broken_output_zero_bounds_each_system_and_grader_and_regrades_the_cache_alike(
    tmp_path, fake_llm
):
    from mama_pipeline.store import Store
    from mama_pipeline_tests.systems.fixtures import grade
    from mama_pipeline_tests.systems.test_assets import CRITERIA, calls, materialise, write_config

    items = [
        mcq("m-ok", 'Q [[answer:{"answer": "A"}]]', ["a", "b", "c", "d"], 0),
        mcq("m-schema", "Breaks the schema [[fault:schema]]", ["a", "b", "c", "d"], 0),
        mcq("m-500", "Never answered [[fault:500]]", ["a", "b", "c", "d"], 0),
        short("s-cut", "Cut at max_tokens [[fault:malformed]]", f"ref {grade('correct')}"),
        short("s-ok", "Q1", f"ref {grade('correct')}"),
        short("s-regraded", "Q2", f"ref [[fault:schemax1]] {grade('partially_correct')}"),  # parses when re-asked
        short("s-ungraded", "Q3", "ref the grader never parses [[fault:schema]]"),
        rubric("r-empty", "Says nothing [[fault:empty]]", [(CRITERIA[0], 5)]),
        rubric("r-ok", "Keep warm?", [(CRITERIA[0], 5), (CRITERIA[1], -3)]),
    ]
    closed = {"name": "closed", "model": "fake-a", "max_failure_rate": 0.5}
    text = {"name": "text", "model": "fake-a", "mcq_output": "text", "tracks": ["mcq"]}  # bound 0.05 by default
    names = ["closed", "text"]

    def run(grader_bound: float) -> dict:
        config = write_config(
            tmp_path,
            fake_llm.url,
            [closed, text],
            llm={"answer_grader": {"max_failure_rate": grader_bound, "parse_retries": 1}},
        )
        materialise(
            config,
            items,
            names,
            "mamabench_items mamabench_criteria corpus_chunks calibration_harness_report systems_items",
        )
        checks = {}
        for name in names:
            result = materialise(config, items, names, "system_answers system_grades", name, raise_on_error=False)
            checks.update({(name, e.check_name): e for e in result.get_asset_check_evaluations()})
        materialise(config, items, names, "system_scoreboard system_comparisons systems_report")
        return checks

    before = calls(fake_llm)
    checks = run(grader_bound=0.5)
    first = calls(fake_llm) - before
    store = Store(tmp_path / "data" / "mama.duckdb")
    grades = {(r["system"], r["item_id"]): r for r in store.read_table("system_grades").iter_rows(named=True)}
    for item, reason in (("m-schema", "schema"), ("s-cut", "cut at max_tokens"), ("r-empty", "empty answer")):
        row = grades[("closed", item)]
        assert (row["status"], row["score"], row["invalid"]) == ("graded", 0.0, True) and reason in row["error"]
    assert grades[("closed", "m-500")]["status"] == "answer_failed" and grades[("text", "m-500")]["score"] is None
    assert grades[("closed", "s-regraded")]["score"] == 0.5  # the grader's unparseable answer was asked again
    assert grades[("closed", "s-ungraded")]["status"] == "grade_failed"
    # text mode: the fake's JSON reply carries no 'Answer: X' line, the schema fault neither: both wrong and invalid
    assert [(grades[("text", i)]["score"], grades[("text", i)]["invalid"]) for i in ("m-ok", "m-schema")] == [
        (0.0, True),
        (0.0, True),
    ]

    assert checks[("closed", "failures_under_bound")].passed
    over = checks[("text", "failures_under_bound")]
    assert not over.passed and over.metadata["summary"].value == (
        "stage system:text mcq: 1 of 3 items failed (33.33%), bound 5.00% (systems.entries[text].max_failure_rate)"
    )

    board = store.read_table("system_scoreboard").filter(pl.col("segment_kind") == "all")
    by = {(r["system"], r["track"]): r for r in board.iter_rows(named=True)}
    mcq_row = by[("closed", "mcq")]  # m-ok right, m-schema wrong, m-500 unanswered
    assert (mcq_row["n_unanswered"], mcq_row["n_invalid"], mcq_row["mean_answered"]) == (1, 1, 0.5)
    assert mcq_row["mean_unanswered_as_0"] == pytest.approx(1 / 3) and mcq_row["mean"] == 0.5
    assert by[("text", "mcq")]["mean"] is None and "system:text mcq" in by[("text", "mcq")]["refused"]
    assert store.read_table("system_comparisons").is_empty()  # the only pair (mcq) has a refused side
    short_row = by[("closed", "short_answer")]  # s-cut 0, s-ok 1, s-regraded 0.5; s-ungraded listed
    assert (short_row["n_grade_failed"], short_row["n_invalid"], short_row["mean"]) == (1, 1, pytest.approx(0.5))
    page = (tmp_path / "data" / "reports" / "systems" / "systems.html").read_text()
    assert "bound 5.00% (systems.entries[text].max_failure_rate)" in page

    # the same answers from the cache: only the transport failure is asked again (m-500 by each system, two
    # attempts each: max_retries 1), the cached parse failures are graded the same way; a tighter grader bound
    # refuses the short answers whose grader failed on 1 of the 3 answers it was asked
    graded = store.read_table("system_grades").drop("grader")
    before = calls(fake_llm)
    checks = run(grader_bound=0.2)
    assert calls(fake_llm) - before == 2 * 2 and first > 4
    assert store.read_table("system_grades").drop("grader").equals(graded)
    summary = checks[("closed", "failures_under_bound")].metadata["summary"].value
    assert summary == (
        "stage answer_grader on system:closed short_answer: 1 of 3 answers failed (33.33%), bound "
        "20.00% (llm.answer_grader.max_failure_rate)"
    )
    board = store.read_table("system_scoreboard").filter(pl.col("segment_kind") == "all")
    refused = board.filter(pl.col("refused").is_not_null()).select("system", "track").rows()
    assert sorted(refused) == [("closed", "short_answer"), ("text", "mcq")]
