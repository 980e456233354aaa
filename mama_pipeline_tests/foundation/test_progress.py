"""The shared progress helper: lines in Dagster run logs, a tqdm bar in a terminal, lines in a pipe."""
import io
import time

import dagster as dg

from mama_pipeline.progress import progress_line, track


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_lines_go_to_the_given_log_with_rate_and_time_left():
    lines: list[str] = []
    with track("encoding", total=4, unit="texts", log=lines.append, every_s=0) as bar:
        bar.update(1)
        bar.update(3)
    assert lines[0].startswith("encoding: 1/4 texts, ") and "est." in lines[0] and lines[0].endswith("s left")
    assert lines[-1].startswith("encoding: 4/4 texts, ") and "done in" in lines[-1]
    assert len(lines) == 2  # the closing line is not repeated when the last update already said it


def test_a_terminal_gets_a_bar_and_a_pipe_gets_lines():
    tty = Terminal()
    with track("judging", total=3, unit="pairs", stream=tty, log=None) as bar:
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
    assert progress_line("x", 5, None, "rows", 2.0) == "x: 5 rows, 2.5/s"
    assert progress_line("x", 0, 3, "rows", 1.0) == "x: 0/3 rows, 0/s, est. unknown left"


def test_inside_a_dagster_step_lines_go_to_the_run_log():
    @dg.asset
    def slow_work() -> None:
        with track("slow work", total=2, unit="items", every_s=0) as bar:
            bar.update(2)

    with dg.instance_for_test() as instance:
        result = dg.materialize([slow_work], instance=instance)
        messages = [e.message for e in instance.all_logs(result.run_id) if e.message]
    assert any(m.startswith("slow work: 2/2 items") for m in messages)
