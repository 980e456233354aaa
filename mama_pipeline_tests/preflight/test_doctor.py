"""`mama-pipeline doctor` against the fault-injecting server: one line per check, exit 0 only when all pass."""

from __future__ import annotations

import pytest
import yaml

from mama_pipeline.cli import main as cli_main
from mama_pipeline_tests.support.fake_llm_server import running_server
from mama_pipeline_tests.support.llm_stages import served, with_embedded
from mama_pipeline_tests.support.processes import free_port

MINILM = {"name": "minilm", "kind": "dense"}  # multipassage.dense_retriever's default


@pytest.fixture(scope="module")
def servers():
    with (
        running_server(served_model="fake-judge") as healthy,
        running_server(served_model="fake-judge", fault="schema") as breaks_schema,
        running_server(served_model="other-model") as other_model,
    ):
        yield {"healthy": healthy.url, "schema": breaks_schema.url, "other": other_model.url}


def doctor(tmp_path, monkeypatch, capsys, llm: dict) -> tuple[int, list[str]]:
    config = tmp_path / "config.yaml"
    raw = {"data_dir": str(tmp_path / "data"), "llm": llm, "retrieval": {"retrievers": [MINILM]}}
    config.write_text(yaml.safe_dump(with_embedded(raw)))
    monkeypatch.setenv("MAMA_CONFIG", str(config))
    monkeypatch.delenv("MAMA_DATA_DIR", raising=False)
    code = cli_main(["doctor", "--timeout-s", "10"])
    assert not (tmp_path / "data").exists()  # doctor writes nothing into the data folder
    return code, capsys.readouterr().out.splitlines()


def test_a_healthy_endpoint_and_the_bundled_inputs_pass(tmp_path, monkeypatch, capsys, servers):
    stage = served(servers["healthy"], "fake-judge", reasoning="json_field")
    code, lines = doctor(tmp_path, monkeypatch, capsys, {"judge": stage, "answer_grader": stage})
    failed = [line for line in lines if line.startswith("FAIL")]
    assert code == 0 and failed == [], lines
    [judge] = [line for line in lines if line.startswith(f"PASS  llm.judge @ {servers['healthy']}:")]
    assert "fake-judge answers in the JudgeVerdictsWithReasoning schema, its reasoning field filled, " in judge
    assert any(line.startswith("PASS  corpus.bundle: ") and "bundle header '<sep>[SOURCE:" in line for line in lines)
    assert sum(line.startswith("PASS  mamabench.sources.") for line in lines) == 9
    assert lines[-1] == "16 passed, 0 failed, 7 not checked (embedded or hub), of 23 checks"
    [room] = [line for line in lines if "data_dir room" in line]  # the real free space of the real file system
    assert room.startswith("PASS  data_dir room: ") and ", against the store's predicted size: " in room, room


@pytest.mark.parametrize("short", [0, 1])
def test_the_room_check_fails_one_byte_short_of_the_predicted_store(tmp_path, short):
    from mama_pipeline.plan._store_size import prediction_or_reason
    from mama_pipeline.preflight._preflight_checks import disk_check
    from mama_pipeline.settings import SAMPLE_CONFIG, load_settings

    s = load_settings(SAMPLE_CONFIG).model_copy(update={"data_dir": str(tmp_path / "data")})
    predicted, _ = prediction_or_reason(s)
    asked = []
    check = disk_check(s, prediction_or_reason(s), lambda folder: asked.append(folder) or predicted - short)
    assert asked == [tmp_path]  # the nearest folder that exists: nothing is created
    assert check.status == ("FAIL" if short else "PASS")
    assert f"GiB free at {tmp_path}, against the store's predicted size: {predicted / 2**30:,.2f} GiB" in check.line


def test_each_broken_endpoint_gives_one_failing_line(tmp_path, monkeypatch, capsys, servers):
    down = f"http://127.0.0.1:{free_port()}/v1"
    llm = {
        "judge": served(servers["healthy"], "fake-judge", reasoning="json_field"),
        "reference_judge": served(servers["schema"], "fake-judge", reasoning="json_field", seed=1),
        "rubric_judge": served(down, "fake-judge"),
        "answer_grader": served(servers["other"], "fake-judge"),
        "query_writer": served(servers["healthy"], "fake-judge", reasoning="server"),
    }
    code, lines = doctor(tmp_path, monkeypatch, capsys, llm)
    failed = [line for line in lines if line.startswith("FAIL")]
    assert code == 1
    assert len(failed) == 4, failed
    assert failed[0].startswith(f"FAIL  llm.query_writer @ {servers['healthy']}: reasoning: server, but no reasoning")
    assert failed[1].startswith(f"FAIL  llm.reference_judge @ {servers['schema']}: answer breaks the ")
    assert failed[2].startswith(f"FAIL  llm.rubric_judge @ {down}: down: ConnectError")
    assert failed[3] == f"FAIL  llm.answer_grader @ {servers['other']}: serves other-model, not 'fake-judge'"
    assert any(line.startswith(f"PASS  llm.judge @ {servers['healthy']}") for line in lines)
    assert "4 failed" in lines[-1]


def test_a_missing_pool_file_and_a_cross_section_mistake_fail_their_lines(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.yaml"
    raw = with_embedded({"data_dir": str(tmp_path / "data")})
    raw["mamabench"] = {"sources": {"whb": {"path": str(tmp_path / "nope.json")}}}
    raw["retrieval"] = {"retrievers": [{"name": "bm25", "kind": "bm25"}]}  # multipassage's default 'minilm' absent
    config.write_text(yaml.safe_dump(raw))
    monkeypatch.setenv("MAMA_CONFIG", str(config))
    assert cli_main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    [room] = [line for line in lines if "data_dir room" in line]  # the pool is read for the prediction too
    assert room.startswith("PASS  data_dir room: ") and (
        "local input files the store copies (a floor: the store's size is not predicted: " in room
    ), room
    failed = [line for line in lines if line.startswith("FAIL")]
    assert failed == [
        f"FAIL  mamabench.sources.whb: source file {tmp_path / 'nope.json'} does not exist",
        "FAIL  multipassage: multipassage.dense_retriever 'minilm' is not in retrieval.retrievers; it must name an "
        "embedding retriever (kind dense or openai_embeddings)",
    ]
