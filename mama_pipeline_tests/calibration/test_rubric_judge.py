"""The candidate rubric judge through the shared client against the fake OpenAI-compatible server."""

import json

import polars as pl
import pytest

from mama_pipeline.calibration._meta_eval import read_meta_eval
from mama_pipeline.calibration._rater_agreement import ALL, JUDGE, harness_report
from mama_pipeline.calibration._rubric_judge import (
    LABEL_SCHEMA,
    RUBRIC_JUDGE_PROMPT,
    STAGE,
    RubricVerdict,
    judge_labels,
    judge_requests,
    judged_rows,
    sample_rows,
)
from mama_pipeline.calibration._side_file import build_side_file
from mama_pipeline_tests.calibration.fixtures import META_EVAL_SAMPLE, VERDICTS


@pytest.fixture(scope="module")
def side_file() -> pl.DataFrame:
    return build_side_file(read_meta_eval(META_EVAL_SAMPLE), VERDICTS).rows


def answer(met: bool) -> str:
    return "[[answer:" + json.dumps({"explanation": "as instructed", "criteria_met": met}) + "]]"


def test_request_shows_the_conversation_then_the_graded_answer_and_the_criterion(side_file):
    row = side_file.row(0, named=True)
    [req] = judge_requests(side_file.head(1))
    system, user = req.messages
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    assert req.item_id == f"meta-line-{row['upstream_line']}"
    for msg in row["prompt"]:
        assert f"{msg['role']}: {msg['content']}" in text
    assert f"assistant: {row['completion']}\n</conversation>" in text
    assert f"<criterion>\n{row['rubric']}\n</criterion>" in text
    assert '{"explanation": "<a few sentences on why>", "criteria_met": true or false}' in text


def test_sample_is_seeded_stable_and_nested(side_file):
    a = sample_rows(side_file, 10, seed=0)
    assert a.equals(sample_rows(side_file, 10, seed=0))
    assert a.height == 10 and a["upstream_line"].is_sorted()
    bigger = sample_rows(side_file, 20, seed=0)
    assert set(a["upstream_line"]) < set(bigger["upstream_line"])
    assert set(sample_rows(side_file, 10, seed=1)["upstream_line"]) != set(a["upstream_line"])
    assert sample_rows(side_file, 0, seed=0).equals(side_file)
    assert sample_rows(side_file, 10_000, seed=0).equals(side_file)


def test_failed_calls_are_listed_never_labelled(side_file, make_client):
    rows = side_file.head(5).with_columns(
        pl.Series(
            "completion",
            [
                answer(True),
                answer(False),
                answer(True),
                "[[fault:malformed]] an answer the server garbles every time",
                "[[fault:500]] an answer the server never returns",
            ],
        )
    )
    client = make_client(stage=STAGE, max_retries=1, parse_retries=1)
    report = client.run(RUBRIC_JUDGE_PROMPT, RubricVerdict, judge_requests(rows))
    labels = judge_labels(rows, report)
    assert labels.schema == pl.Schema(LABEL_SCHEMA)
    assert labels["upstream_line"].to_list() == rows["upstream_line"].to_list()
    assert labels["status"].to_list() == ["ok", "ok", "ok", "parse_failed", "transport_failed"]
    assert labels["criteria_met"].to_list() == [True, False, True, None, None]
    assert labels["explanation"].to_list()[:3] == ["as instructed"] * 3
    assert labels["error"].null_count() == 3 and "HTTP 500" in labels["error"][4]

    judged = judged_rows(rows, labels)
    assert judged["upstream_line"].to_list() == rows["upstream_line"].head(3).to_list()
    report_df = harness_report(judged, [])
    judge = report_df.filter((pl.col("rater") == JUDGE) & (pl.col("scope_category") == ALL)).row(0, named=True)
    assert judge["rows"] == 3 and judge["met_rate"] == pytest.approx(2 / 3)

    again = client.run(RUBRIC_JUDGE_PROMPT, RubricVerdict, judge_requests(rows))
    assert [r.from_cache for r in again.results[:4]] == [True] * 4  # answers and parse failures are cached
    assert again.results[4].status == "transport_failed" and not again.results[4].from_cache


def test_result_count_must_match_rows(side_file, make_client):
    report = make_client(stage=STAGE).run(RUBRIC_JUDGE_PROMPT, RubricVerdict, judge_requests(side_file.head(2)))
    with pytest.raises(ValueError, match="2 judge results for 3 rows"):
        judge_labels(side_file.head(3), report)
