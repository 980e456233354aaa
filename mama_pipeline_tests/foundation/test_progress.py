"""The shared progress helper: lines in Dagster run logs, a tqdm bar in a terminal, lines in a pipe."""

import io
import time

import dagster as dg
import pytest

from mama_pipeline.common.progress import progress_line, track


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_lines_go_to_the_given_log_with_rate_and_time_left():
    lines: list[str] = []
    with track("encoding", total=4, unit="texts", log=lines.append, every_s=0, alike=True) as bar:
        bar.update(1)
        bar.update(3)
    assert lines[0].startswith("encoding: 1/4 texts, ") and "est." in lines[0] and lines[0].endswith("s left")
    assert lines[-1].startswith("encoding: 4/4 texts, ") and "done in" in lines[-1]
    assert len(lines) == 2  # the closing line is not repeated when the last update already said it


def test_a_terminal_gets_a_bar_and_a_pipe_gets_lines():
    tty = Terminal()
    with track("judging", total=3, unit="pairs", stream=tty, log=None, alike=True) as bar:
        bar.update(3)
    assert "judging" in tty.getvalue() and "3/3" in tty.getvalue() and "pairs/s" in tty.getvalue()
    pipe = io.StringIO()
    with track("judging", total=3, unit="pairs", stream=pipe, log=None, every_s=3600) as bar:
        bar.update(3)
    assert pipe.getvalue().startswith("judging: 3/3 pairs") and "\r" not in pipe.getvalue()


def test_heartbeat_reports_work_that_counts_nothing_until_it_ends():
    lines: list[str] = []
    with track("bm25 index", total=10, unit="chunks", log=lines.append, every_s=0.05, heartbeat=True) as bar:
        time.sleep(0.3)
        bar.update(10)
    assert sum(line.startswith("bm25 index: 0/10 chunks") for line in lines) >= 2
    assert lines[-1].startswith("bm25 index: 10/10 chunks")


def test_progress_line_without_a_total_and_before_any_rate():
    assert progress_line("x", 5, None, "rows", 2.0, alike=True) == "x: 5 rows, 2.5/s"
    assert progress_line("x", 0, 3, "rows", 1.0, alike=True) == "x: 0/3 rows, 0/s, est. unknown left"


def test_units_not_declared_alike_get_a_count_and_the_time_elapsed_never_an_estimate():
    assert progress_line("retrievers", 1, 2, "retrievers", 11.0) == "retrievers: 1/2 retrievers, 11s elapsed"
    assert progress_line("retrievers", 2, 2, "retrievers", 200.0) == "retrievers: 2/2 retrievers, done in 200.0s"
    assert progress_line("steps", 3, None, "steps", 4.0) == "steps: 3 steps, 4s elapsed"
    lines: list[str] = []
    with track("retrievers", total=2, unit="retrievers", log=lines.append, every_s=0) as bar:
        bar.update()
        bar.update()
    assert lines[0].startswith("retrievers: 1/2 retrievers, ") and lines[0].endswith("s elapsed")
    assert not any("/s" in line or "est." in line or "left" in line for line in lines), lines
    tty = Terminal()
    with track("retrievers", total=2, unit="retrievers", stream=tty, log=None) as bar:
        bar.update()
    shown = tty.getvalue()
    assert "1/2 retrievers" in shown and "/s" not in shown and "<" not in shown and "?" not in shown, shown


@pytest.mark.slow
def test_beir_retriever_progress_estimates_only_from_the_encoders_own_count(monkeypatch, tmp_path):
    """Two encoders of unlike cost: the retriever count shows no time left; the encoding of each does."""
    from mama_pipeline.evaluation import _beir_evaluation as beir_evaluation
    from mama_pipeline.retrieval import _embedding_cache as embedding_cache
    from mama_pipeline.retrieval._registry import RetrievalEnv
    from mama_pipeline.retrieval.settings import RetrievalSettings
    from mama_pipeline.store import Store
    from mama_pipeline_tests.retrieval.fixtures import chunks_frame, queries_frame

    lines: list[str] = []

    def logged(label, total, unit="items", **kw):  # every update logged; no heartbeat thread
        return track(
            label,
            total,
            unit,
            log=lines.append,
            every_s=0,
            **{k: v for k, v in kw.items() if k not in ("heartbeat", "every_s", "log")},
        )

    monkeypatch.setattr(beir_evaluation, "track", logged)
    monkeypatch.setattr(embedding_cache, "track", logged)
    monkeypatch.setattr(embedding_cache, "PROGRESS_EVERY_TEXTS", 2)  # 8 chunks: four counts per encoding
    settings = RetrievalSettings.model_validate(
        {
            "retrievers": [
                {"name": "minilm", "kind": "dense"},
                {"name": "minilm-prompted", "kind": "dense", "params": {"document_prompt": "passage: "}},
            ]
        }
    )
    store = Store(tmp_path / "mama.duckdb")
    env = lambda load: RetrievalEnv(
        store=store, work_dir=tmp_path, resolve=lambda p: p, load_rankings=load, log=lambda _m: None
    )
    rankings, _ = beir_evaluation.run_registry(
        ["minilm", "minilm-prompted"], chunks_frame(), queries_frame(), 3, settings, env
    )
    assert set(rankings["retriever"]) == {"minilm", "minilm-prompted"}
    counted = [line for line in lines if " retrievers" in line]
    assert [line.split(": ")[1].split(",")[0] for line in counted] == ["1/2 retrievers", "2/2 retrievers"]
    assert not any("est." in line or "left" in line or "/s" in line for line in counted), counted
    encoding = [line for line in lines if line.startswith("encoding document texts: ")]
    assert sum("est." in line and line.endswith("s left") for line in encoding) >= 2  # the encoders' own estimates


def test_inside_a_dagster_step_lines_go_to_the_run_log():
    @dg.asset
    def slow_work() -> None:
        with track("slow work", total=2, unit="items", every_s=0) as bar:
            bar.update(2)

    with dg.instance_for_test() as instance:
        result = dg.materialize([slow_work], instance=instance)
        messages = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any(m.startswith("slow work: 2/2 items") for m in messages)
