"""Background threads take spare CPU: their priority is lowered, the caller's is not."""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from mama_pipeline.common.thread_priority import background_thread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are per thread on Linux only")
def test_a_background_thread_runs_ten_nice_levels_lower_and_leaves_the_caller_alone():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    with ThreadPoolExecutor(1, initializer=background_thread) as pool:
        inside = pool.submit(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
    assert inside == min(before + 10, 19)
    assert os.getpriority(os.PRIO_PROCESS, 0) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are per thread on Linux only")
def test_a_step_without_an_llm_yields_the_cpu_to_one_with(tmp_path):
    # a multiprocess run, one process per step: the step that set up no LLM resource lowered all its threads
    from mama_pipeline.store import Store
    from mama_pipeline_tests.foundation.test_dagster_runtime import run_dagster

    base = os.getpriority(os.PRIO_PROCESS, 0)
    out = run_dagster(
        [
            "asset",
            "materialize",
            "-m",
            "mama_pipeline_tests.foundation.parallel_defs",
            "--select",
            "plain_priorities,llm_priorities",
        ],
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    store = Store(tmp_path / "data" / "mama.duckdb")
    plain, llm = store.read_table("plain_priorities"), store.read_table("llm_priorities")
    assert plain["pid"][0] != llm["pid"][0] and plain["pid"][0] != os.getpid()
    assert plain.height > 1  # Dagster's own threads too, started before the step's first use of the settings
    assert set(plain["nice"]) == {min(base + 10, 19)}
    assert set(llm["nice"]) == {base}


def test_the_in_process_executor_keeps_its_priority(tmp_path, monkeypatch):
    import dagster as dg

    from mama_pipeline_tests.foundation import parallel_defs

    monkeypatch.setenv("MAMA_DATA_DIR", str(tmp_path / "data"))
    base = os.getpriority(os.PRIO_PROCESS, 0)
    result = dg.materialize([parallel_defs.plain_priorities], resources=parallel_defs.shared_resources())
    assert result.success
    assert set(result.output_for_node("plain_priorities")["nice"]) == {base}
    assert os.getpriority(os.PRIO_PROCESS, 0) == base
